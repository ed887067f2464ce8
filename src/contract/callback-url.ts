// The callback_url rules the service checks at submit time. The emulator enforces them and the
// client checks them before submitting, with this one function, so both always agree.
import ipaddr from 'ipaddr.js';

export const MAX_CALLBACK_URL_LENGTH = 1024;
export const FORBIDDEN_HOST_SUFFIXES = [
  '.local',
  '.internal',
  '.lan',
  '.home',
  '.corp',
  '.test',
  '.invalid',
  '.example',
] as const;

export type CallbackUrlCheck = { ok: true } | { ok: false; reason: string };

export interface CallbackUrlOptions {
  /** Development switch: accept loopback receivers (localhost, 127.0.0.0/8, ::1). Off by default. */
  allowLoopback?: boolean;
}

// IANA allocates only 2000::/3 as IPv6 global unicast; the rest (including the deprecated
// IPv4-compatible ::a.b.c.d) is reserved, though ipaddr.js calls it 'unicast'.
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/**
 * Only 'unicast' (public) addresses may receive deliveries; every other range ipaddr.js names is
 * private or special-purpose (AS112 and AMT included: no webhook receiver lives there).
 */
function addressProblem(host: string, allowLoopback: boolean): string | undefined {
  if (!ipaddr.isValid(host)) return undefined;
  let addr: ipaddr.IPv4 | ipaddr.IPv6 = ipaddr.parse(host);
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) {
    addr = (addr as ipaddr.IPv6).toIPv4Address();
  }
  let range: string = addr.range();
  if (range === 'unicast' && addr.kind() === 'ipv6' && !addr.match(IPV6_GLOBAL_UNICAST))
    range = 'reserved';
  if (range === 'unicast') return undefined;
  if (range === 'loopback' && allowLoopback) return undefined;
  return `host is a private or reserved address (${range})`;
}

export function checkCallbackUrl(url: string, options: CallbackUrlOptions = {}): CallbackUrlCheck {
  const allowLoopback = options.allowLoopback ?? false;
  if (typeof url !== 'string' || url.length === 0)
    return { ok: false, reason: 'callback_url is empty' };
  if (url.length > MAX_CALLBACK_URL_LENGTH) {
    return {
      ok: false,
      reason: `callback_url is ${url.length} characters; at most ${MAX_CALLBACK_URL_LENGTH} are allowed`,
    };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'callback_url is not an absolute URL' };
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return {
      ok: false,
      reason: `callback_url scheme must be http or https, not ${parsed.protocol.replace(':', '')}`,
    };
  }
  // Userinfo, even an empty one ("http://@host"), is refused: the authority must not contain '@'.
  // Backslash ends the authority too: URL parsing treats it as '/' for http and https.
  const authority = url.slice(url.indexOf('//') + 2).split(/[/\\?#]/, 1)[0] ?? '';
  if (parsed.username || parsed.password || authority.includes('@')) {
    return { ok: false, reason: 'callback_url must not carry user information (user:pass@)' };
  }
  let host = parsed.hostname.toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  // A fully qualified name may end in dots ("example.test."); they do not change the name.
  host = host.replace(/\.+$/, '');
  if (!host) return { ok: false, reason: 'callback_url has no host' };
  if (host === 'localhost' || host.endsWith('.localhost')) {
    return allowLoopback
      ? { ok: true }
      : { ok: false, reason: 'callback_url host must not be localhost' };
  }
  // The bare name ("test", "example") is the reserved top-level domain itself, so it is refused too.
  const suffix = FORBIDDEN_HOST_SUFFIXES.find((s) => host.endsWith(s) || host === s.slice(1));
  if (suffix) return { ok: false, reason: `callback_url host must not end in ${suffix}` };
  const problem = addressProblem(host, allowLoopback);
  if (problem) return { ok: false, reason: `callback_url ${problem}` };
  return { ok: true };
}

/**
 * A key that names a callback URL, however it is spelled (callback_url, callbackUrl,
 * Callback-URL): a service may read any of them, at any depth of a free-form input.
 */
export const CALLBACK_KEY = /^callback[_-]?url$/i;

/** Whether a value holds a callback-URL key at any depth (walked without recursion). */
export function hasCallbackKey(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      pending.push(...(v as unknown[]));
      continue;
    }
    for (const [k, child] of Object.entries(v)) {
      if (CALLBACK_KEY.test(k)) return true;
      pending.push(child);
    }
  }
  return false;
}
