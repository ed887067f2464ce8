import { describe, expect, it } from 'vitest';
import { FORBIDDEN_HOST_SUFFIXES, checkCallbackUrl } from '../../../src/contract/callback-url.js';

const okUrl = (u: string) => expect(checkCallbackUrl(u)).toEqual({ ok: true });
const refused = (u: string, reason: string | RegExp) => {
  const r = checkCallbackUrl(u);
  expect(r.ok).toBe(false);
  if (!r.ok) expect(r.reason).toMatch(reason);
};

describe('scheme and form', () => {
  it.each([
    'http://hooks.example.com/x',
    'https://hooks.example.com/x?a=1#f',
    'https://8.8.8.8:8443/hook',
    'https://[2606:4700:4700::1111]/hook',
  ])('%s is allowed', okUrl);
  it.each([
    'ftp://hooks.example.com/',
    'javascript:alert(1)',
    'file:///etc/passwd',
    'ws://hooks.example.com/',
  ])('%s has a refused scheme', (u) => {
    refused(u, /scheme must be http or https/);
  });
  it('refuses empty and relative values', () => {
    refused('', /empty/);
    refused('/relative/path', /not an absolute URL/);
    refused('hooks.example.com', /not an absolute URL/);
  });
});

describe('length', () => {
  const base = 'https://hooks.example.com/';
  it('1024 characters exactly are allowed', () => {
    const u = base + 'a'.repeat(1024 - base.length);
    expect(u).toHaveLength(1024);
    okUrl(u);
  });
  it('1025 characters are refused', () => {
    const u = base + 'a'.repeat(1025 - base.length);
    expect(checkCallbackUrl(u)).toEqual({
      ok: false,
      reason: 'callback_url is 1025 characters; at most 1024 are allowed',
    });
  });
});

describe('userinfo', () => {
  it.each([
    'https://user:pass@hooks.example.com/',
    'https://user@hooks.example.com/',
    'https://@hooks.example.com/',
    'https://:@hooks.example.com/',
  ])('%s is refused', (u) => {
    refused(u, /user information/);
  });
  it('an @ in the path or query is not userinfo', () => {
    okUrl('https://hooks.example.com/a@b?x=c@d');
  });
});

describe('host names', () => {
  it.each([
    'http://localhost/',
    'http://LOCALHOST:8080/',
    'http://localhost./',
    'http://api.localhost/',
  ])('%s is localhost', (u) => {
    refused(u, /must not be localhost/);
  });
  it.each([...FORBIDDEN_HOST_SUFFIXES])('a host ending in %s is refused', (suffix) => {
    expect(checkCallbackUrl(`https://hooks${suffix}/x`)).toEqual({
      ok: false,
      reason: `callback_url host must not end in ${suffix}`,
    });
    expect(checkCallbackUrl(`https://HOOKS${suffix.toUpperCase()}./x`)).toEqual({
      ok: false,
      reason: `callback_url host must not end in ${suffix}`,
    });
    expect(checkCallbackUrl(`https://a.b${suffix}../x`)).toEqual({
      ok: false,
      reason: `callback_url host must not end in ${suffix}`,
    });
  });
  it('lists exactly the suffixes of the interface', () => {
    expect([...FORBIDDEN_HOST_SUFFIXES]).toEqual([
      '.local',
      '.internal',
      '.lan',
      '.home',
      '.corp',
      '.test',
      '.invalid',
      '.example',
    ]);
  });
  it('a bare reserved name is refused', () => {
    refused('https://test/', /must not end in \.test/);
  });
  it('a suffix inside a longer label is not a match', () => {
    okUrl('https://hooks.localhost-tools.com/');
    okUrl('https://mytest.com/');
    okUrl('https://example.com/');
    okUrl('https://corp.example.org/');
  });
  it('an uppercase public host with a trailing dot is fine', () => {
    okUrl('https://HOOKS.Example.COM./x');
  });
});

// One address from every private or reserved range, IPv4 and IPv6.
const PRIVATE_V4 = [
  '0.0.0.0',
  '0.1.2.3',
  '10.0.0.1',
  '10.255.255.255',
  '100.64.0.1',
  '100.127.255.254',
  '127.0.0.1',
  '127.8.9.10',
  '169.254.169.254',
  '172.16.0.1',
  '172.31.255.255',
  '192.0.0.8',
  '192.0.2.1',
  '192.31.196.1',
  '192.52.193.1',
  '192.88.99.1',
  '192.168.1.1',
  '192.175.48.1',
  '198.18.0.1',
  '198.19.255.255',
  '198.51.100.7',
  '203.0.113.9',
  '224.0.0.1',
  '239.255.255.250',
  '240.0.0.1',
  '255.255.255.255',
];
const PRIVATE_V6 = [
  '::',
  '::1',
  'fe80::1',
  'fc00::1',
  'fd12:3456::1',
  'ff02::1',
  'fec0::1',
  '100::1',
  '64:ff9b::a00:1',
  '64:ff9b:1::1',
  '2001::1',
  '2001:2::1',
  '2001:3::1',
  '2001:4:112::1',
  '2001:10::1',
  '2001:20::1',
  '2001:db8::1',
  '2002:a00:1::1',
  '3fff::1',
  '5f00::1',
  '2620:4f:8000::1',
  '::7f00:1',
  '4000::1',
];

describe('addresses', () => {
  it.each(PRIVATE_V4)('IPv4 %s is refused', (a) => {
    refused(`http://${a}/hook`, /private or reserved address/);
  });
  it.each(PRIVATE_V6)('IPv6 %s is refused', (a) => {
    refused(`http://[${a}]/hook`, /private or reserved address/);
  });
  it.each(['10.0.0.1', '127.0.0.1', '169.254.169.254', '192.168.0.1'])(
    'IPv4-mapped IPv6 of %s is refused',
    (a) => {
      refused(`http://[::ffff:${a}]/hook`, /private or reserved address/);
    },
  );
  it.each(['http://2130706433/', 'http://0x7f.1/', 'http://0177.0.0.1/', 'http://127.1/'])(
    'numeric form %s of loopback is refused',
    (u) => {
      refused(u, /private or reserved address \(loopback\)/);
    },
  );
  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '11.0.0.1'])(
    'public IPv4 %s is allowed',
    (a) => {
      okUrl(`https://${a}/hook`);
    },
  );
  it('public IPv6 and its IPv4-mapped public form are allowed', () => {
    okUrl('https://[2a00:1450:4001::1]/hook');
    okUrl('https://[::ffff:8.8.8.8]/hook');
  });
});

describe('allowLoopback', () => {
  const dev = { allowLoopback: true };
  it.each([
    'http://localhost:3000/hook',
    'http://127.0.0.1:3000/hook',
    'http://[::1]:3000/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://api.localhost/',
  ])('%s is allowed in development', (u) => {
    expect(checkCallbackUrl(u, dev)).toEqual({ ok: true });
  });
  it('is off by default', () => {
    refused('http://127.0.0.1:3000/hook', /loopback/);
  });
  it('allows loopback only', () => {
    expect(checkCallbackUrl('http://10.0.0.1/', dev).ok).toBe(false);
    expect(checkCallbackUrl('http://hooks.local/', dev).ok).toBe(false);
    expect(checkCallbackUrl('http://user@localhost/', dev).ok).toBe(false);
  });
});

describe('reasons', () => {
  it('never echo the URL', () => {
    const secret = 'https://alice.smith:hunter2@hooks.corp/path?email=alice@example.com';
    const r = checkCallbackUrl(secret);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).not.toContain('alice');
      expect(r.reason).not.toContain('hunter2');
    }
  });
});
