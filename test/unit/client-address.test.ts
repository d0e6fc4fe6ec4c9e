import { clientAddressKey } from '../../ingress/auth/client-address';

describe('clientAddressKey', () => {
  it.each([
    ['an IPv4 address', '203.0.113.9', '203.0.113.9'],
    ['an IPv4-mapped IPv6 address', '::ffff:203.0.113.9', '203.0.113.9'],
    ['an IPv4-mapped IPv6 address in hex', '::ffff:cb00:7109', '203.0.113.9'],
    ['an IPv4-mapped address written in full', '0:0:0:0:0:ffff:cb00:7109', '203.0.113.9'],
    ['an IPv6 address', '2001:db8:aa:bb:1:2:3:4', '2001:db8:aa:bb::/64'],
    ['a compressed IPv6 address', '2001:DB8:AA:BB::99', '2001:db8:aa:bb::/64'],
    ['a compression inside the /64', '2001:db8::1', '2001:db8:0:0::/64'],
    ['loopback', '::1', '0:0:0:0::/64'],
    ['a zone id', 'fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['an IPv4-compatible tail on another prefix', '64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
    ['something that is no address', 'unknown', 'unknown'],
  ])('When the client is %s (%s), then it counts as %s', (_, address, key) => {
    expect(clientAddressKey(address)).toBe(key);
  });
});
