// The result cache across batches, in both modes, through the typed client, a real worker and
// the emulator over HTTP: a re-run sends nothing and charges nothing, its lines are the first
// run's marked as cached; --refresh fetches again and renews the entries; an entry older than a
// run's max age is fetched again; a failure is never cached.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import type { StoredResult } from '../../src/index.js';
import { ResultCache } from '../../src/store/result-cache.js';
import { tempDir, uniqueBatchId } from './fixtures.js';
import { openStoreFromSettings } from '../../src/store/index.js';
import { envConfig, startCallEnv, withCallWorker, type CallEnv } from '../calls/call-env.js';
import { runCli } from '../cli/cli-env.js';
import { testEncryptionEnv } from '../harness/temporal.js';
import type { PcdsClient } from '../../src/client.js';
import type { CacheOption } from '../../src/calls/cache-policy.js';

let env: CallEnv;

beforeAll(async () => {
  // A store of this file's own: the cache outlives a run, and other tests send the same people.
  const url = `sqlite:${join(tempDir('result-cache'), 'store.sqlite')}`;
  vi.stubEnv('PCDS_STORE_URL', url);
  env = await startCallEnv();
  env.config = envConfig(env.emulator, env.proxy.url, { PCDS_STORE_URL: url });
});
afterAll(async () => {
  await env?.stop();
  vi.unstubAllEnvs();
});

/** Rows no other test of this file sends: known people (found) and unknown addresses (empty). */
const pool = sampleRows({ rows: 60 }).map((r) => r.email);
let taken = 0;
function freshPeople(tag: string, n: number) {
  return Array.from({ length: n }, (_, i) => ({
    email: i % 3 === 2 ? `${tag}.${taken + i}@unknown.pcds.dev` : pool[taken++],
  }));
}

async function runBatch(
  client: PcdsClient,
  rows: Record<string, unknown>[],
  compact: boolean,
  // What a deployment's default (PCDS_CACHE on) gives a batch.
  cache: CacheOption = {},
) {
  const submitsBefore = env.emulator.stats().jobsSubmitted;
  const requestsBefore = requestsSeen();
  const batch = await client.startBatch({
    batchId: uniqueBatchId('cache'),
    rows,
    window: 4,
    compact,
    keyIds: [env.emulator.devKey.id],
    cache,
  });
  const summary = await batch.result();
  const lines: StoredResult[] = [];
  for await (const line of batch.results()) lines.push(line);
  return {
    summary,
    lines,
    submits: env.emulator.stats().jobsSubmitted - submitsBefore,
    requests: requestsSeen() - requestsBefore,
  };
}

const requestsSeen = () => Object.values(env.emulator.stats().requests).reduce((a, b) => a + b, 0);

/** A line without what differs between runs: the cache marks and the key that sent it. */
const comparable = ({ cached: _c, fetchedAt: _f, keyId: _k, ...rest }: StoredResult) => rest;

for (const compact of [false, true])
  describe(compact ? 'compact rows' : 'rows as workflows', () => {
    it('a second batch over the same rows sends no request, charges nothing, and has the same lines marked cached', async () => {
      const people = freshPeople(`a${compact ? 'c' : 'w'}`, 6);
      // A repeat of the first row: it shares that row's call (or its cached line).
      const rows = [...people, { email: people[0].email.toUpperCase() }];
      await withCallWorker(env, async (client) => {
        const first = await runBatch(client, rows, compact);
        expect(first.submits).toBe(6);
        expect(first.summary).toMatchObject({ state: 'done', done: 7, found: 5, empty: 2 });
        expect(first.summary.cached ?? 0).toBe(0);
        expect(first.lines.some((l) => l.cached)).toBe(false);

        const second = await runBatch(client, rows, compact);
        expect(second.submits).toBe(0);
        expect(second.requests).toBe(0);
        expect(second.summary).toMatchObject({
          state: 'done',
          done: 7,
          found: 5,
          empty: 2,
          cached: 6,
          duplicates: 1,
        });
        expect(second.summary.credits ?? 0).toBe(0);
        expect(second.summary.creditsSaved).toBeGreaterThan(0);
        expect(second.lines.map(comparable)).toEqual(first.lines.map(comparable));
        for (const [i, line] of second.lines.entries()) {
          expect(line.cached).toBe(true);
          expect(Date.parse(line.fetchedAt!)).toBeGreaterThan(0);
          // The request that fetched it, in the first batch.
          expect(line.requestId).toBe(first.lines[i].requestId);
        }
      });
    }, 120_000);

    it('--refresh sends every row again and renews the entries; an entry older than max age is fetched again', async () => {
      const rows = freshPeople(`r${compact ? 'c' : 'w'}`, 4);
      await withCallWorker(env, async (client) => {
        const first = await runBatch(client, rows, compact);
        expect(first.submits).toBe(4);
        const store = await openStoreFromSettings(env.config);
        onTestFinished(() => store.close());
        const cache = new ResultCache(store);
        const before = await cache.get('person_enrichment', rows[0], { mode: 'use' });
        expect(before?.requestId).toBe(first.lines[0].requestId);

        const refreshed = await runBatch(client, rows, compact, 'refresh');
        expect(refreshed.submits).toBe(4);
        expect(refreshed.lines.some((l) => l.cached)).toBe(false);
        const after = await cache.get('person_enrichment', rows[0], { mode: 'use' });
        expect(after?.requestId).toBe(refreshed.lines[0].requestId);
        expect(after?.requestId).not.toBe(before?.requestId);
        expect(after!.fetchedAt!).toBeGreaterThanOrEqual(before!.fetchedAt!);

        await new Promise((r) => setTimeout(r, 50));
        const young = await runBatch(client, rows, compact, { maxAge: 1 });
        expect(young.submits).toBe(4);
        expect(young.lines.some((l) => l.cached)).toBe(false);

        const off = await runBatch(client, rows, compact, false);
        expect(off.submits).toBe(4);
      });
    }, 180_000);

    it('a failure is never cached: the next batch sends the row again', async () => {
      const rows = freshPeople(`f${compact ? 'c' : 'w'}`, 3).slice(0, 2);
      await withCallWorker(env, async (client) => {
        env.emulator.setFaults({ jobInternalErrorShare: 1, paths: ['/person/enrichment'] });
        let failed;
        try {
          failed = await runBatch(client, rows, compact);
        } finally {
          env.emulator.setFaults({ jobInternalErrorShare: 0, paths: [] });
        }
        expect(failed.summary.failed).toBe(2);
        const again = await runBatch(client, rows, compact);
        expect(again.submits).toBe(2);
        expect(again.summary).toMatchObject({ found: 2, failed: 0 });
        expect(again.summary.cached ?? 0).toBe(0);
      });
    }, 120_000);
  });

it('`pcds batch start --dry-run` counts the rows the cache would answer; --no-cache and --refresh count none', async () => {
  const rows = freshPeople('plan', 6);
  await withCallWorker(env, async (client) => {
    await runBatch(client, rows.slice(0, 3), true);
  });
  const dir = tempDir('result-cache-plan');
  const input = join(dir, 'plan.csv');
  writeFileSync(input, `email\n${rows.map((r) => r.email).join('\n')}\n`);
  const cliEnv = {
    ...testEncryptionEnv(),
    PCDS_STORE_URL: process.env.PCDS_STORE_URL ?? '',
    PCDS_DATA_DIR: dir,
  };
  const plan = (...flags: string[]) =>
    runCli(
      [
        'batch',
        'start',
        '-i',
        input,
        '-o',
        join(dir, 'plan.jsonl'),
        '--dry-run',
        '--no-estimate',
      ].concat(flags),
      cliEnv,
    );
  const used = await plan();
  expect(used.code, used.stderr).toBe(0);
  // 3 of the 6 rows were fetched by the earlier batch (2 found, 1 empty).
  expect(used.stdout).toContain('(3 answered by the result cache: not sent), 3 sent');
  expect(used.stdout).toMatch(
    /cache: 3 rows from the result cache save ~\d+ requests and ~\d+ credits/,
  );
  for (const flag of ['--no-cache', '--refresh']) {
    const off = await plan(flag);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toContain('6 sent');
    expect(off.stdout).not.toContain('result cache');
  }
  const both = await plan('--no-cache', '--refresh');
  expect(both.code).not.toBe(0);
  expect(both.stderr).toContain('choose one of --no-cache and --refresh');
}, 120_000);
