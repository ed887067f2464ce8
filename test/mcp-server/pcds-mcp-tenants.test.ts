// Tenants of the built `pcds mcp --transport http`, as two callers holding tokens meet each other:
// Alice through the official MCP SDK client, Bob through raw JSON-RPC posts, calls and batches run
// by a real worker on the dev server against the emulator over HTTP. Each caller's ids, cache
// entries and usage readings are its own; the operator's label cannot be handed to a caller.
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { tempDir, uniqueBatchId, writeCsv } from '../batch/fixtures.js';
import { envConfig, startCallEnv, withCallWorker, type CallEnv } from '../calls/call-env.js';
import { spawnCli } from '../cli/cli-env.js';
import { temporalAddress, testNamespace } from '../harness/temporal.js';
import {
  mcpServiceEnv,
  sdkClient,
  startMcp,
  tool,
  until,
  type McpProcess,
  type RawCaller,
} from './mcp-http.js';

const ALICE = 'alice-token-0123456789abcdef0123456789';
const BOB = 'bob-token-0123456789abcdef0123456789ab';
/** Labels of this run: the store and the namespace outlive it, and keep other runs' entries. */
const run = `${process.pid}${Date.now().toString(36)}`;

let env: CallEnv;
const dir = tempDir('pcds-mcp-tenants');
const rows = sampleRows({ rows: 4 });
const input = writeCsv(dir, 'people.csv', rows as unknown as Record<string, string>[], ['email']);

// A store of this file's own (worker and `pcds mcp` alike): cache entries outlive a run.
const storeUrl = `sqlite:${join(tempDir('pcds-mcp-tenants-store'), 'store.sqlite')}`;

beforeAll(async () => {
  vi.stubEnv('PCDS_STORE_URL', storeUrl);
  env = await startCallEnv();
  env.config = envConfig(env.emulator, env.proxy.url, { PCDS_STORE_URL: storeUrl });
});
afterAll(async () => {
  await env?.stop();
  vi.unstubAllEnvs();
});

const serviceEnv = (taskQueue: string) => ({
  ...mcpServiceEnv(env.emulator, dir),
  PCDS_STORE_URL: storeUrl,
  PCDS_TEMPORAL_ADDRESS: temporalAddress(),
  PCDS_TEMPORAL_NAMESPACE: testNamespace(),
  PCDS_TASK_QUEUE: taskQueue,
});

/** A server with two callers of this run (their folders hold the input), and its callers. */
async function twoCallers(
  taskQueue: string,
  extra: Record<string, string> = {},
): Promise<{ mcp: McpProcess; alice: Client; bob: RawCaller; labels: [string, string] }> {
  const labels: [string, string] = [`alice-${run}`, `bob-${run}`];
  for (const label of labels) {
    mkdirSync(join(dir, label), { recursive: true, mode: 0o700 });
    copyFileSync(input, join(dir, label, 'people.csv'));
  }
  const mcp = await startMcp({
    ...serviceEnv(taskQueue),
    PCDS_MCP_TOKENS: `${labels[0]}:${ALICE},${labels[1]}:${BOB}`,
    ...extra,
  });
  const alice = await sdkClient(mcp.url, ALICE);
  return { mcp, alice, bob: { url: mcp.url, token: BOB }, labels };
}

/** Starts the built `pcds mcp` and says how it ended: refused at start, or listening. */
function startOrRefuse(
  vars: Record<string, string>,
): Promise<{ refused: boolean; code: number | null; stderr: string }> {
  const child = spawnCli(['mcp', '--transport', 'http', '--port', '0'], vars);
  let stderr = '';
  return new Promise((resolve) => {
    child.stderr!.on('data', (c: Buffer) => {
      stderr += c.toString();
      if (/Streamable HTTP at/.test(stderr)) {
        child.kill('SIGTERM');
        resolve({ refused: false, code: null, stderr });
      }
    });
    child.once('exit', (code) => resolve({ refused: true, code, stderr }));
  });
}

describe('pcds mcp: the operator’s label', () => {
  it('rule: `default` in PCDS_MCP_TOKENS, alone or beside other labels, is refused at start with the rule, never the token', async () => {
    for (const tokens of [`default:${ALICE}`, `alice:${BOB},default:${ALICE}`]) {
      const r = await startOrRefuse({ ...serviceEnv('unused'), PCDS_MCP_TOKENS: tokens });
      expect(r.refused, r.stderr).toBe(true);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/labelled "default", which is reserved for the operator's token/);
      expect(r.stderr).not.toContain(ALICE);
    }
  });
});

describe('pcds mcp: ids are each caller’s own', () => {
  it(
    'rule: a batch named after another caller’s row (`<id>-row-3`) neither stalls nor fails that row, and start_batch answers the same for ids another caller used as for new ones',
    { timeout: 240_000 },
    async () => {
      await withCallWorker(env, async (pcds, taskQueue) => {
        const { mcp, alice, bob, labels } = await twoCallers(taskQueue);
        const f2 = uniqueBatchId('f2');
        try {
          // Bob takes the id of Alice's row 3 for a batch of his, and holds it paused.
          const trap = await tool(bob, 'start_batch', {
            input: 'people.csv',
            output: `${f2}-row-3.jsonl`,
            batch_id: `${f2}-row-3`,
            window: 1,
            key_ids: [env.emulator.devKey.id],
          });
          expect(trap.doc).toMatchObject({ state: 'running' });
          await tool(bob, 'pause_batch', { batch_id: `${f2}-row-3` });
          await until(
            bob,
            'batch_status',
            { batch_id: `${f2}-row-3` },
            (d) => d.progress?.state === 'paused' || d.last_published?.state === 'paused',
          );

          const submitsBefore = env.emulator.stats().jobsSubmitted;
          const started = await tool(alice, 'start_batch', {
            input: 'people.csv',
            output: `${f2}.jsonl`,
            batch_id: f2,
            window: 1,
            weight: 2,
            key_ids: [env.emulator.devKey.id],
          });
          expect(started.doc).toEqual({ batch_id: f2, state: 'running' });
          // Her batch is her tenant's, and carries its weight to Temporal's task queue.
          const described = await pcds.temporal.workflow
            .getHandle(`batch-${labels[0]}.${f2}`)
            .describe();
          expect(described.raw.workflowExecutionInfo?.priority).toMatchObject({
            fairnessKey: `batch:${labels[0]}.${f2}`,
            fairnessWeight: 2,
          });
          // Alice's batch ends on its own; where a row waited for Bob's workflow, Bob lets it go.
          const settled = (d: Record<string, any>) => d.state !== 'running';
          let ended = await until(alice, 'batch_status', { batch_id: f2 }, settled, 90_000).catch(
            () => undefined,
          );
          const stalled = ended === undefined;
          if (stalled) {
            await tool(bob, 'cancel_batch', { batch_id: `${f2}-row-3` });
            ended = await until(alice, 'batch_status', { batch_id: f2 }, settled, 60_000);
          }
          expect(stalled, "Alice's batch waited for Bob's workflow").toBe(false);
          expect(ended).toMatchObject({
            state: 'done',
            summary: { total: rows.length, done: rows.length, failed: 0 },
          });
          const lines = readFileSync(join(dir, `alice-${run}`, `${f2}.jsonl`), 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as { row: number; outcome: string });
          expect(lines.map((l) => l.row).sort()).toEqual([1, 2, 3, 4]);
          expect(lines.every((l) => l.outcome === 'found' || l.outcome === 'empty')).toBe(true);
          // Every row of Alice's was sent (Bob's paused batch sent at most its first row).
          expect(env.emulator.stats().jobsSubmitted - submitsBefore).toBeGreaterThanOrEqual(
            rows.length,
          );
          // Bob's batch is his, still paused: nothing of Alice's moved it.
          const his = await tool(bob, 'batch_status', { batch_id: `${f2}-row-3` });
          expect(his.doc.state).toBe('running');

          // An id Alice used, her rows' ids, and one nobody used: Bob's starts answer alike (his
          // own batches), so start_batch tells him nothing of hers.
          const fresh = uniqueBatchId('fresh');
          for (const id of [f2, `${f2}-row-1`, `${f2}-row-4`, fresh]) {
            const r = await tool(bob, 'start_batch', {
              input: 'people.csv',
              output: `${id}.jsonl`,
              batch_id: id,
              window: 1,
              key_ids: [env.emulator.devKey.id],
            });
            expect(r.doc, id).toEqual({ batch_id: id, state: 'running' });
            await tool(bob, 'cancel_batch', { batch_id: id });
          }
          await tool(bob, 'cancel_batch', { batch_id: `${f2}-row-3` });
        } finally {
          await alice.close();
          await mcp.stop();
        }
      });
    },
  );
});

describe('pcds mcp: the result cache is each caller’s own', () => {
  const person = (tag: string) => ({ email: `nobody.${tag}.${run}@unknown.pcds.dev` });
  const callDone = async (caller: Client | RawCaller, params: Record<string, unknown>) => {
    const started = await tool(caller, 'start_call', { endpoint: 'person_enrichment', params });
    expect(started.isError, JSON.stringify(started.doc)).toBe(false);
    return until(
      caller,
      'call_status',
      { call_id: started.doc.call_id },
      (d) => d.state !== 'running',
    );
  };

  it(
    'rule: by default another caller’s lookup of the same person is no cache hit: no `cached`, no request id or time of the first caller; the caller’s own repeat is',
    { timeout: 120_000 },
    async () => {
      await withCallWorker(env, async (_pcds, taskQueue) => {
        const { mcp, alice, bob } = await twoCallers(taskQueue);
        try {
          const params = person('scoped');
          const first = await callDone(alice, params);
          expect(first).toMatchObject({ state: 'done', outcome: 'empty' });
          expect(first.cached).toBeUndefined();
          const bobs = await callDone(bob, params);
          expect(bobs).toMatchObject({ state: 'done', outcome: 'empty' });
          expect(bobs.cached).toBeUndefined();
          expect(bobs.fetchedAt).toBeUndefined();
          expect(bobs.requestId).not.toBe(first.requestId);
          // Alice's own repeat comes from her entry, with her request id.
          const again = await callDone(alice, params);
          expect(again).toMatchObject({ cached: true, requestId: first.requestId });
          expect(typeof again.fetchedAt).toBe('string');
        } finally {
          await alice.close();
          await mcp.stop();
        }
      });
    },
  );

  it(
    'rule: with PCDS_CACHE_SCOPE=shared another caller’s entry answers, without its request id or time',
    { timeout: 120_000 },
    async () => {
      await withCallWorker(env, async (_pcds, taskQueue) => {
        const { mcp, alice, bob } = await twoCallers(taskQueue, { PCDS_CACHE_SCOPE: 'shared' });
        try {
          const params = person('shared');
          const first = await callDone(alice, params);
          expect(first.cached).toBeUndefined();
          const bobs = await callDone(bob, params);
          expect(bobs).toMatchObject({ state: 'done', outcome: 'empty', cached: true });
          expect(bobs.fetchedAt).toBeUndefined();
          expect(bobs.requestId).not.toBe(first.requestId);
          expect(JSON.stringify(bobs)).not.toContain(first.requestId);
        } finally {
          await alice.close();
          await mcp.stop();
        }
      });
    },
  );
});

describe('pcds mcp: usage readings', () => {
  it(
    'rule: 1,000 `usage` calls from one caller cost the pool one request; another caller’s same question is answered from that reading; a new question within the minute is refused, saying when to ask',
    { timeout: 180_000 },
    async () => {
      await withCallWorker(env, async (_pcds, taskQueue) => {
        const { mcp, alice, bob } = await twoCallers(taskQueue);
        const usageRequests = () =>
          Object.entries(env.emulator.stats(env.emulator.devKey.id).requests)
            .filter(([k]) => k.endsWith('/usage'))
            .reduce((n, [, v]) => n + v, 0);
        try {
          const before = usageRequests();
          const first = await tool(alice, 'usage', {});
          expect(first.isError).toBe(false);
          expect(first.doc.period).toMatch(/^\d{4}-\d{2}$/);
          for (let i = 1; i < 1000; i++) {
            const r = await tool(alice, 'usage', {});
            expect(r.doc.read_at).toBe(first.doc.read_at);
          }
          expect((await tool(bob, 'usage', {})).doc.read_at).toBe(first.doc.read_at);
          expect(usageRequests() - before).toBe(1);
          expect(first.doc.read_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
          const other = await tool(alice, 'usage', { month: 1, year: 2026 });
          expect(other.isError).toBe(true);
          expect(other.doc.error.code).toBe('usage_rate_limited');
          expect(other.doc.error.message).toMatch(/ask again in \d+ s/);
          expect(usageRequests() - before).toBe(1);
        } finally {
          await alice.close();
          await mcp.stop();
        }
      });
    },
  );
});
