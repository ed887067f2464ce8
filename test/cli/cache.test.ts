// `pcds cache stats|purge` and `pcds erase` as users run them (the built command, a child
// process) on a sealed SQLite store: the stats name the store and the times to live, a purge
// needs a condition, and an erasure by email or URL removes every entry that names the person,
// whatever the request that fetched it named, without ever printing a value.
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

/** Ada's profile, as the service returns it: it names her email and her profile URL. */
const ADA_PROFILE = {
  displayname: 'Augusta Ada King',
  best_business_email: ADA,
  social_profiles: { linkedin: { url: `https://${PROFILE}` } },
  organizations: [{ name: 'Analytical Engines' }],
};

async function withStore(fn: (cache: ResultCache) => Promise<void>): Promise<void> {
  const store = await openStoreFromSettings(loadConfig(env));
  try {
    await fn(new ResultCache(store));
  } finally {
    await store.close();
  }
}

const found = (requestId: string, result: unknown = ADA_PROFILE) => ({
  outcome: 'found' as const,
  requestId,
  status: 'completed',
  result,
});

async function seed(): Promise<void> {
  const store = await openStoreFromSettings(loadConfig(env));
  try {
    const cache = new ResultCache(store);
    await cache.put('person_enrichment', { email: ADA }, USE, found('req_ada'));
    await cache.put('person_enrichment', { email: 'grace@example.org' }, USE, {
      outcome: 'empty',
      requestId: 'req_grace',
      status: 'completed',
    });
    await cache.put('person_enrichment', { social_media_url: PROFILE }, USE, found('req_url'));
    await cache.put(
      'company_enrichment',
      { domain: 'example.org' },
      USE,
      found('req_co', { name: 'Example Org' }),
    );
    // Her data fetched by her name and company, and by a question quoting her email.
    await cache.put(
      'person_lookup_fields',
      { name: 'Augusta Ada King', company: 'Analytical Engines', fields: ['best_work_email'] },
      USE,
      found('req_name', { best_work_email: ADA }),
    );
    await cache.put(
      'person_ask',
      { question: `Where does ${ADA} work now?`, phone: '+1 415 555 0100' },
      USE,
      found('req_ask', { answer: 'At the engine works.' }),
    );
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

it('rule: cache purge --email erases every entry that names her, whatever its request named; pcds erase --url too; no value is printed', async () => {
  const bad = await pcds('cache', 'purge', '--email', 'lovelace at example');
  expect(bad.code).toBe(2);
  expect(bad.stderr).toMatch(/--email: not an email address/);
  const mixed = await pcds('cache', 'purge', '--email', ADA, '--endpoint', 'person_enrichment');
  expect(mixed.code).toBe(2);
  expect(mixed.stderr).toMatch(/erase a person from the whole store/);

  // By email: the entries fetched by her email, by her profile URL, by her name and company
  // and by a question quoting the email.
  const byEmail = await pcds('cache', 'purge', '--email', ' Ada.Lovelace@EXAMPLE.org ');
  expect(byEmail.code, byEmail.stderr).toBe(0);
  expect(byEmail.stdout).toMatch(/^erasure in the store sqlite:/);
  expect(byEmail.stdout).toContain('4 cache entries and 0 pending single calls removed');
  expect(byEmail.stdout).toMatch(/the WAL checkpointed into the file and truncated/);
  expect(byEmail.stdout).toMatch(/beyond the store[^]*workflow histories/);
  const after = await stats();
  expect(after.endpoints.find((e) => e.endpoint === 'person_enrichment')).toMatchObject({
    entries: 1,
    found: 0,
    empty: 1,
  });
  expect(entriesOf(after, 'person_lookup_fields')).toBe(0);
  expect(entriesOf(after, 'person_ask')).toBe(0);
  expect(entriesOf(after, 'company_enrichment')).toBe(1);

  // By URL, with `pcds erase`: her profile fetched again by its URL.
  await withStore((cache) =>
    cache.put('person_enrichment', { social_media_url: PROFILE }, USE, found('req_again')),
  );
  const byUrl = await pcds('erase', '--url', `https://www.${PROFILE}/`, '--json');
  expect(byUrl.code, byUrl.stderr).toBe(0);
  expect(JSON.parse(byUrl.stdout)).toMatchObject({
    store: `sqlite:${path}`,
    identifiers: 1,
    removed: { cacheEntries: 1, batchRows: 0 },
  });

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
