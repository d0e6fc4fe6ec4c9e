import { isIPv4, isIPv6 } from 'node:net';

/** The hextets of an IPv6 address the throttle keeps: its /64, what one site is usually given. */
const IPV6_NETWORK_HEXTETS = 4;

/**
 * The key sign-in failures of a client address count under: an IPv4 address as it is (an
 * IPv4-mapped IPv6 address, `::ffff:192.0.2.1`, as its IPv4 address), an IPv6 address by its /64
 * (`2001:db8:0:1::/64`). One host is usually handed a whole /64, so counting single IPv6 addresses
 * would give it 2^64 fresh allowances. Anything else (no address known) is kept as it is.
 */
export function clientAddressKey(address: string): string {
  const bare = address.replace(/%.*$/, ''); // an IPv6 zone id (fe80::1%eth0) names no other host
  if (isIPv4(bare)) return bare;
  if (!isIPv6(bare)) return address;
  const hextets = expandIPv6(bare);
  if (isIPv4Mapped(hextets)) {
    const [high, low] = [hextets[6] ?? 0, hextets[7] ?? 0];
    return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
  }
  return `${hextets
    .slice(0, IPV6_NETWORK_HEXTETS)
    .map((hextet) => hextet.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a dotted IPv4 tail converted). */
function expandIPv6(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string | undefined) =>
    part ? part.split(':').map((hextet) => Number.parseInt(hextet, 16)) : [];
  const front = parse(head);
  const back = parse(tail);
  const zeros = tail === undefined ? [] : new Array<number>(8 - front.length - back.length).fill(0);
  return [...front, ...zeros, ...back];
}

function isIPv4Mapped(hextets: readonly number[]): boolean {
  return hextets.slice(0, 5).every((hextet) => hextet === 0) && hextets[5] === 0xffff;
}
