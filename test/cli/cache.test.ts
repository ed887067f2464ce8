// `pcds cache stats|purge` as users run them (the built command, a child process) on a sealed
// SQLite store: the stats name the store and the times to live, a purge needs a condition, and an
// erasure by email or URL removes what the request named without ever printing the value.
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openStoreFromSettings, ResultCache } from '../../src/store/index.js';
import { testEncryptionEnv } from '../harness/temporal.js';
import { runCli, tempDir, type CliResult } from './cli-env.js';

const dir = tempDir('cache');
const path = join(dir, 'store.sqlite');
const env = { PCDS_STORE_URL: `sqlite:${path}`, PCDS_DATA_DIR: dir, ...testEncryptionEnv() };
const outputs: CliResult[] = [];
const pcds = (...args: string[]) => runCli(args, env, outputs);

const USE = { mode: 'use' } as const;
const ADA = 'ada.lovelace@example.org';
const PROFILE = 'linkedin.com/in/ada-lovelace';

interface Stats {
  store: string;
  endpoints: {
    endpoint: string;
    entries: number;
    found: number;
    empty: number;
    expired: number;
    hits: number;
    oldestFetchedAt?: string;
    ttl?: { found: string; empty: string };
  }[];
}

async function seed(): Promise<void> {
  const store = await openStoreFromSettings(loadConfig(env));
  try {
    const cache = new ResultCache(store);
    const found = (requestId: string) => ({
      outcome: 'found' as const,
      requestId,
      status: 'completed',
      result: { full_name: 'Augusta Ada King' },
    });
    await cache.put('person_enrichment', { email: ADA }, USE, found('req_ada'));
    await cache.put('person_enrichment', { email: 'grace@example.org' }, USE, {
      outcome: 'empty',
      requestId: 'req_grace',
      status: 'completed',
    });
    await cache.put('person_enrichment', { social_media_url: PROFILE }, USE, found('req_url'));
    await cache.put('company_enrichment', { domain: 'example.org' }, USE, found('req_co'));
    // Fetched two days ago: past a newsfeed's time to live.
    await cache.put(
      'person_newsfeed',
      { email: 'grace@example.org' },
      USE,
      found('req_news'),
      Date.now() - 2 * 86_400_000,
    );
    // One hit on Ada's entry.
    await cache.get('person_enrichment', { email: ADA }, USE);
  } finally {
    await store.close();
  }
}

async function stats(): Promise<Stats> {
  const r = await pcds('cache', 'stats', '--json');
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Stats;
}

const entriesOf = (s: Stats, endpoint: string) =>
  s.endpoints.find((e) => e.endpoint === endpoint)?.entries;

afterAll(() => {
  // No output of any command carries the erased values or a result value.
  const all = outputs
    .map((o) => `${o.stdout}\n${o.stderr}`)
    .join('\n')
    .toLowerCase();
  for (const v of ['lovelace', 'augusta']) expect(all).not.toContain(v);
});

it('rule: cache stats shows per endpoint entries, found, empty, expired, hits and times to live, and where the store is', async () => {
  await seed();
  const s = await stats();
  expect(s.store).toBe(`sqlite:${path}`);
  expect(s.endpoints.find((e) => e.endpoint === 'person_enrichment')).toMatchObject({
    entries: 3,
    found: 2,
    empty: 1,
    expired: 0,
    hits: 1,
    ttl: { found: '30d', empty: '7d' },
  });
  expect(entriesOf(s, 'company_enrichment')).toBe(1);
  expect(s.endpoints.find((e) => e.endpoint === 'person_newsfeed')).toMatchObject({
    entries: 1,
    expired: 1,
    ttl: { found: '1d', empty: '6h' },
  });
  expect(Date.parse(s.endpoints[0].oldestFetchedAt!)).toBeGreaterThan(Date.now() - 60_000);
  const table = await pcds('cache', 'stats');
  expect(table.code, table.stderr).toBe(0);
  expect(table.stdout).toContain(`store: sqlite:${path}`);
  expect(table.stdout).toMatch(/person_enrichment\s+3\s+2\s+1\s+0\s+1\s+30d \/ 7d/);
  expect(table.stdout).toMatch(/person_search is not cached/);
});

it('rule: a purge needs a condition; an unknown endpoint is named with the valid ones', async () => {
  const none = await pcds('cache', 'purge');
  expect(none.code).toBe(2);
  expect(none.stderr).toMatch(/^error: say what to remove/);
  const all = await pcds('cache', 'purge', '--all');
  expect(all.code).toBe(2);
  expect(all.stderr).toMatch(/--yes/);
  const unknown = await pcds('cache', 'purge', '--endpoint', 'person_enrichmint');
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toMatch(/cached endpoints: person_enrichment, /);
  const age = await pcds('cache', 'purge', '--older-than', 'soon');
  expect(age.code).toBe(2);
  expect(age.stderr).toMatch(/--older-than: not a duration/);
  expect(entriesOf(await stats(), 'person_enrichment')).toBe(3);
});

it('rule: cache purge --expired removes the entries past their time to live, as the workers do', async () => {
  const r = await pcds('cache', 'purge', '--expired');
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toBe('removed 1 cache entry\n');
  const s = await stats();
  expect(entriesOf(s, 'person_newsfeed')).toBe(0);
  expect(entriesOf(s, 'person_enrichment')).toBe(3);
});

it('rule: cache purge --email and --url remove what a request named, normalised, and never print the value', async () => {
  const bad = await pcds('cache', 'purge', '--email', 'lovelace at example');
  expect(bad.code).toBe(2);
  expect(bad.stderr).toMatch(/--email: not an email address/);

  const byEmail = await pcds('cache', 'purge', '--email', ' Ada.Lovelace@EXAMPLE.org ');
  expect(byEmail.code, byEmail.stderr).toBe(0);
  expect(byEmail.stdout).toMatch(/^removed 1 cache entry/);
  expect(entriesOf(await stats(), 'person_enrichment')).toBe(2);

  const byUrl = await pcds('cache', 'purge', '--url', `https://www.${PROFILE}/`, '--json');
  expect(byUrl.code, byUrl.stderr).toBe(0);
  expect(JSON.parse(byUrl.stdout)).toEqual({ removed: 1 });
  const after = await stats();
  expect(after.endpoints.find((e) => e.endpoint === 'person_enrichment')).toMatchObject({
    entries: 1,
    found: 0,
    empty: 1,
  });
  expect(entriesOf(after, 'company_enrichment')).toBe(1);

  const everything = await pcds('cache', 'purge', '--all', '--yes');
  expect(everything.code, everything.stderr).toBe(0);
  expect(everything.stdout).toMatch(/^removed 2 cache entries/);
});

it('rule: a store that cannot be reached is an error without its password', async () => {
  const r = await runCli(
    ['cache', 'stats'],
    { ...env, PCDS_STORE_URL: 'postgres://pcds:s3cret-pw@127.0.0.1:1/pcds' },
    outputs,
  );
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/^error: /);
  expect(`${r.stdout}${r.stderr}`).not.toContain('s3cret-pw');
});
