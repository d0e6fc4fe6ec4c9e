import { BlockList, isIP } from 'node:net';

/**
 * Addresses a webhook may never reach unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true: loopback,
 * private, shared, link-local (cloud metadata at 169.254.169.254 among them), unspecified, and the
 * IPv6 forms that carry an IPv4 address a router may turn into one of those (IPv4-mapped,
 * -compatible and -translated, NAT64, 6to4, Teredo), and the deprecated site-local range. This is
 * the early check of an address written in the URL; the real guard is request-filtering-agent at
 * connect time, which also sees what a host name resolves to (DNS rebinding included).
 */
const BLOCKED = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['224.0.0.0', 3],
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  // IPv4-compatible (deprecated), the unspecified and loopback addresses among them.
  ['::', 96],
  ['::ffff:0:0', 96],
  // IPv4-translated (RFC 2765, SIIT): ::ffff:0:a.b.c.d.
  ['::ffff:0:0:0', 96],
  // NAT64: the well-known prefix and the local-use one (RFC 6052, RFC 8215).
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  // 6to4: an IPv4 address in bits 16-48.
  ['2002::', 16],
  // Teredo: the client's IPv4 address in the last 32 bits (inverted), the server's in bits 32-64.
  ['2001::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  // Site-local (deprecated, still routed inside some networks).
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv6');
}

/** Host names that always mean this machine or its network. */
const LOCAL_NAMES = /(^|\.)(localhost|local|internal|localdomain)\.?$/i;

/** The setting that lets webhooks reach http and private targets (named by the refusals). */
const ALLOWING_SETTING = 'WEBHOOK_ALLOW_PRIVATE_TARGETS';

export const WEBHOOK_TARGET_MESSAGES = {
  notUrl: 'url must be an absolute http or https URL',
  httpsOnly: `url must use https (http is allowed only with ${ALLOWING_SETTING}=true)`,
  credentials: 'url must not carry a user name or password',
  privateTarget: `url must not point at a loopback, private, link-local or metadata address (allowed only with ${ALLOWING_SETTING}=true)`,
} as const;

/** Why a subscription may not deliver to `url`; undefined when it may (as far as the URL tells). */
export function webhookTargetProblem(url: string, allowPrivateTargets: boolean): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return WEBHOOK_TARGET_MESSAGES.notUrl;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return WEBHOOK_TARGET_MESSAGES.notUrl;
  if (parsed.username || parsed.password) return WEBHOOK_TARGET_MESSAGES.credentials;
  if (allowPrivateTargets) return undefined;
  if (parsed.protocol !== 'https:') return WEBHOOK_TARGET_MESSAGES.httpsOnly;
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  const family = isIP(host);
  if (family === 0) return LOCAL_NAMES.test(host) ? WEBHOOK_TARGET_MESSAGES.privateTarget : undefined;
  return BLOCKED.check(host, family === 4 ? 'ipv4' : 'ipv6')
    ? WEBHOOK_TARGET_MESSAGES.privateTarget
    : undefined;
}
