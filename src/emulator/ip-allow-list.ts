// Per-key IP allow-list: exact addresses, CIDR ranges (IPv4 or IPv6) and IPv4 wildcards a.b.c.*.
// Entries are compiled once when a key is created or updated, so a request pays one range check.
import ipaddr from 'ipaddr.js';

type Addr = ipaddr.IPv4 | ipaddr.IPv6;
export type AllowRule = { kind: 'ipv4' | 'ipv6'; range: [Addr, number] };

const WILDCARD = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.\*$/;

/** IPv4-mapped IPv6 (::ffff:a.b.c.d, what a dual-stack socket reports) compares as IPv4. */
export function normalizeAddress(text: string): Addr | undefined {
  try {
    const a = ipaddr.parse(text.trim());
    if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress())
      return (a as ipaddr.IPv6).toIPv4Address();
    return a;
  } catch {
    return undefined;
  }
}

/** Compile one entry; a string describing the problem when it is not a valid entry. */
export function compileAllowEntry(entry: string): AllowRule | string {
  const e = entry.trim();
  const w = WILDCARD.exec(e);
  if (w) {
    if (w.slice(1, 4).some((o) => Number(o) > 255)) return 'is not a valid a.b.c.* wildcard';
    return { kind: 'ipv4', range: [ipaddr.IPv4.parse(`${w[1]}.${w[2]}.${w[3]}.0`), 24] };
  }
  if (e.includes('/')) {
    try {
      const [addr, bits] = ipaddr.parseCIDR(e);
      return { kind: addr.kind(), range: [addr, bits] };
    } catch {
      return 'is not a valid CIDR range';
    }
  }
  const a = normalizeAddress(e);
  if (!a) return 'is not an IP address, CIDR range or a.b.c.* wildcard';
  return { kind: a.kind(), range: [a, a.kind() === 'ipv4' ? 32 : 128] };
}

export function isAllowed(rules: readonly AllowRule[], address: string): boolean {
  const a = normalizeAddress(address);
  if (!a) return false;
  const kind = a.kind();
  for (const r of rules) {
    if (r.kind !== kind) continue;
    if ((a as ipaddr.IPv4).match(r.range)) return true;
  }
  return false;
}
