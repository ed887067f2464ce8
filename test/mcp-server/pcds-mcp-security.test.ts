// The built `pcds mcp --transport http` as a stranger, a web page and a second caller meet it:
// the official MCP SDK client and raw HTTP against real processes, calls and batches run by a
// real worker on the dev server against the emulator.
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { TOKEN_FILE_NAME } from '../../src/mcp-server/access.js';
import { tempDir, uniqueBatchId, writeCsv } from '../batch/fixtures.js';
import { startCallEnv, withCallWorker, type CallEnv } from '../calls/call-env.js';
import { temporalAddress, testNamespace } from '../harness/temporal.js';
import { mcpServiceEnv, raw, runMcp, sdkClient, startMcp, tool, until } from './mcp-http.js';
const ALICE = 'alice-token-0123456789abcdef0123456789';
const BOB = 'bob-token-0123456789abcdef0123456789ab';

let env: CallEnv;
const dir = tempDir('pcds-mcp-security');
const rows = sampleRows({ rows: 4, withName: true });
const input = writeCsv(dir, 'people.csv', rows as unknown as Record<string, string>[], [
  'email',
  'name',
]);

beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

const serviceEnv = () => mcpServiceEnv(env.emulator, dir);

describe('pcds mcp over HTTP: who may use it', () => {
  it('rule: without PCDS_MCP_TOKEN a token is generated once (0600, folder 0700, shown once on stderr) and reused; no token or a wrong one is a 401 with WWW-Authenticate', async () => {
    const dataDir = join(tempDir('pcds-mcp-token'), 'data');
    const vars = { ...serviceEnv(), PCDS_DATA_DIR: dataDir };
    const first = await startMcp(vars);
    let token: string;
    try {
      const file = join(dataDir, TOKEN_FILE_NAME);
      token = readFileSync(file, 'utf8').trim();
      expect(token.length).toBeGreaterThanOrEqual(32);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
      expect(first.stderr()).toContain(token);

      // Without credentials nothing answers, initialize and tools/call included.
      for (const method of ['initialize', 'tools/call', 'tools/list']) {
        const none = await raw(first.url, {}, method);
        expect(none.status, method).toBe(401);
        expect(none.headers['www-authenticate']).toBe('Bearer realm="pcds-mcp"');
        expect(none.body).not.toContain('usage');
      }
      const wrong = await raw(first.url, { authorization: `Bearer ${token}x` }, 'tools/call');
      expect(wrong.status).toBe(401);
      expect(wrong.headers['www-authenticate']).toBe(
        'Bearer realm="pcds-mcp", error="invalid_token"',
      );
      await expect(sdkClient(first.url)).rejects.toMatchObject({ code: 401 });
      await expect(sdkClient(first.url, 'x'.repeat(43))).rejects.toMatchObject({ code: 401 });

      const client = await sdkClient(first.url, token);
      try {
        const usage = await tool(client, 'usage', {});
        expect(usage.isError).toBe(false);
        expect(usage.doc.period).toMatch(/^\d{4}-\d{2}$/);
      } finally {
        await client.close();
      }
    } finally {
      await first.stop();
    }

    // The next start reuses the file and does not print the token again.
    const second = await startMcp(vars);
    try {
      expect(second.stderr()).not.toContain(token);
      expect(second.stderr()).toContain(TOKEN_FILE_NAME);
      const client = await sdkClient(second.url, token);
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      await client.close();
    } finally {
      await second.stop();
    }
  });

  it('rule: a rebound Host (DNS rebinding) or a foreign Origin is refused, with or without the token; this server’s own names pass', async () => {
    const mcp = await startMcp({
      ...serviceEnv(),
      PCDS_MCP_TOKEN: ALICE,
      PCDS_MCP_ALLOWED_HOSTS: 'mcp.internal.example',
    });
    try {
      const port = mcp.url.port;
      const auth = { authorization: `Bearer ${ALICE}` };
      const rebound = `rebind.attacker.example:${port}`;
      // The page's own origin equals the Host it sent: still refused, the name is not ours.
      const refused: Record<string, string>[] = [
        { ...auth, host: rebound, origin: `http://${rebound}` },
        { ...auth, host: rebound },
        { host: rebound, origin: `http://${rebound}` },
        { ...auth, origin: 'https://attacker.example' },
        { ...auth, origin: `http://localhost:${Number(port) + 1}` },
      ];
      for (const headers of refused) {
        const r = await raw(mcp.url, headers, 'tools/call');
        expect(r.status, JSON.stringify(headers)).toBe(403);
        expect(r.body).not.toContain('credits');
      }
      for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, 'mcp.internal.example']) {
        const r = await raw(mcp.url, { ...auth, host, origin: `http://${host}` });
        expect(r.status, host).toBe(200);
        expect(r.body).toContain('start_batch');
      }
    } finally {
      await mcp.stop();
    }
  });

  it('rule: --host 0.0.0.0 without PCDS_MCP_TOKEN is refused, naming the setting, and generates nothing; with it, it starts', async () => {
    const dataDir = join(tempDir('pcds-mcp-wide'), 'data');
    const refused = await runMcp({ ...serviceEnv(), PCDS_DATA_DIR: dataDir }, [
      '--host',
      '0.0.0.0',
      '--port',
      '0',
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/PCDS_MCP_TOKEN/);
    expect(refused.stderr).not.toMatch(/Streamable HTTP at/);
    expect(existsSync(join(dataDir, TOKEN_FILE_NAME))).toBe(false);

    const wide = await startMcp({ ...serviceEnv(), PCDS_MCP_TOKEN: ALICE }, ['--host', '0.0.0.0']);
    try {
      const local = new URL(`http://127.0.0.1:${wide.url.port}/mcp`);
      expect((await raw(local, {})).status).toBe(401);
      expect((await raw(local, { authorization: `Bearer ${ALICE}` })).status).toBe(200);
    } finally {
      await wide.stop();
    }
  });
});

describe('pcds mcp over HTTP: one caller’s work is its own', () => {
  it('rule: a second token gets not found (as for an unknown id) for the first one’s call, batch and export, and cannot pause, resume or cancel them, nor take over their ids or idempotency keys', async () => {
    await withCallWorker(env, async (pcds, taskQueue) => {
      const mcp = await startMcp({
        ...serviceEnv(),
        PCDS_MCP_TOKENS: `alice:${ALICE},bob:${BOB}`,
        PCDS_TEMPORAL_ADDRESS: temporalAddress(),
        PCDS_TEMPORAL_NAMESPACE: testNamespace(),
        PCDS_TASK_QUEUE: taskQueue,
      });
      const alice = await sdkClient(mcp.url, ALICE);
      const bob = await sdkClient(mcp.url, BOB);
      // With several tokens each caller's paths resolve in its own folder of the root.
      for (const who of ['alice', 'bob']) {
        mkdirSync(join(dir, who), { recursive: true, mode: 0o700 });
        copyFileSync(input, join(dir, who, 'people.csv'));
      }
      try {
        // A call (a key of this run: the namespace outlives it).
        const orderKey = uniqueBatchId('order');
        const call = await tool(alice, 'start_call', {
          endpoint: 'person_enrichment',
          params: { email: rows[0].email },
          idempotency_key: orderKey,
        });
        const callId = call.doc.call_id as string;
        const done = await until(
          alice,
          'call_status',
          { call_id: callId },
          (d) => d.state !== 'running',
        );
        expect(done).toMatchObject({ state: 'done', outcome: 'found' });
        const unknown = await tool(bob, 'call_status', { call_id: 'call-person_enrichment-none' });
        const foreign = await tool(bob, 'call_status', { call_id: callId });
        expect(foreign.isError).toBe(true);
        expect(foreign.doc.error.code).toBe(unknown.doc.error.code);
        expect(foreign.doc.error.code).toBe('call_not_found');
        expect(JSON.stringify(foreign.doc)).not.toContain(rows[0].email);
        // The same idempotency key from Bob is Bob's own call, not a way into Alice's.
        const bobs = await tool(bob, 'start_call', {
          endpoint: 'person_enrichment',
          params: { email: rows[1].email },
          idempotency_key: orderKey,
        });
        expect(bobs.doc.call_id).not.toBe(callId);
        expect(
          (
            await until(
              bob,
              'call_status',
              { call_id: bobs.doc.call_id },
              (d) => d.state !== 'running',
            )
          ).outcome,
        ).toBe('found');
        // Work started outside `pcds mcp` has no caller: with several tokens, nobody's.
        const cli = await pcds.startCall('person_enrichment', { email: rows[2].email });
        expect((await tool(alice, 'call_status', { call_id: cli.workflowId })).doc.error.code).toBe(
          'call_not_found',
        );

        // A batch, held paused by Alice while Bob tries it.
        const batchId = uniqueBatchId('mcpiso');
        const output = `${batchId}.jsonl`;
        const started = await tool(alice, 'start_batch', {
          input: 'people.csv',
          output,
          batch_id: batchId,
          window: 1,
          key_ids: [env.emulator.devKey.id],
        });
        expect(started.doc).toEqual({ batch_id: batchId, state: 'running' });
        await tool(alice, 'pause_batch', { batch_id: batchId });
        await until(
          alice,
          'batch_status',
          { batch_id: batchId },
          (d) => d.progress?.state === 'paused',
        );
        const noBatch = await tool(bob, 'batch_status', { batch_id: uniqueBatchId('none') });
        expect(noBatch.doc.error.code).toBe('batch_not_found');
        for (const name of ['batch_status', 'pause_batch', 'resume_batch', 'cancel_batch']) {
          const r = await tool(bob, name, { batch_id: batchId });
          expect(r.isError, name).toBe(true);
          expect(r.doc.error.code, name).toBe('batch_not_found');
        }
        // Bob choosing Alice's batch id starts a batch of his own (each caller's ids are its own):
        // the answer is the one any new id gets, and reads nothing of hers.
        const taken = await tool(bob, 'start_batch', {
          input: 'people.csv',
          output: `${batchId}-bob.jsonl`,
          batch_id: batchId,
          window: 1,
          key_ids: [env.emulator.devKey.id],
        });
        expect(taken.doc).toEqual({ batch_id: batchId, state: 'running' });
        const bobsOwn = await until(
          bob,
          'batch_status',
          { batch_id: batchId },
          (d) => d.state !== 'running',
        );
        expect(bobsOwn).toMatchObject({ state: 'done', summary: { done: rows.length } });
        // Bob's resume and cancel did nothing: still paused, then Alice's resume finishes it.
        const still = await tool(alice, 'batch_status', { batch_id: batchId });
        expect(still.doc).toMatchObject({ state: 'running', progress: { state: 'paused' } });
        await tool(alice, 'resume_batch', { batch_id: batchId });
        const ended = await until(
          alice,
          'batch_status',
          { batch_id: batchId },
          (d) => d.state !== 'running',
        );
        expect(ended).toMatchObject({
          state: 'done',
          summary: { total: rows.length, done: rows.length },
        });
        // Alice's results are in her folder; Bob can neither read them as input nor truncate
        // them: the same name with overwrite is a file of his own.
        const aliceResults = join(dir, 'alice', output);
        const aliceText = readFileSync(aliceResults, 'utf8');
        expect(aliceText.trim().split('\n')).toHaveLength(rows.length);
        for (const path of [`../alice/${output}`, aliceResults, `../alice/none.csv`]) {
          const r = await tool(bob, 'start_batch', { input: path, output: 'x.jsonl' });
          expect(r.doc.error.code, path).toBe('path_not_allowed');
        }
        const overBatch = uniqueBatchId('mcpisoover');
        const over = await tool(bob, 'start_batch', {
          input: 'people.csv',
          output,
          overwrite: true,
          batch_id: overBatch,
          window: 1,
          key_ids: [env.emulator.devKey.id],
        });
        expect(over.doc).toEqual({ batch_id: overBatch, state: 'running' });
        await until(bob, 'batch_status', { batch_id: overBatch }, (d) => d.state !== 'running');
        expect(readFileSync(aliceResults, 'utf8')).toBe(aliceText);
        expect(existsSync(join(dir, 'bob', output))).toBe(true);

        // A search export.
        const exportId = uniqueBatchId('mcpisoexp');
        await tool(alice, 'start_search_export', {
          params: { query: 'engineer' },
          max_results: 5,
          output: `${exportId}.jsonl`,
          export_id: exportId,
        });
        const exported = await until(
          alice,
          'search_export_status',
          { export_id: exportId },
          (d) => d.state !== 'running',
        );
        expect(exported.state).toBe('done');
        const foreignExport = await tool(bob, 'search_export_status', { export_id: exportId });
        expect(foreignExport.isError).toBe(true);
        expect(foreignExport.doc.error.code).toBe('export_not_found');
      } finally {
        await alice.close();
        await bob.close();
        await mcp.stop();
      }
    });
  });

  it('rule: with the lone `default` token the caller sees its own work and work started outside `pcds mcp`; a lone named token does not', async () => {
    await withCallWorker(env, async (pcds, taskQueue) => {
      const mcp = await startMcp({
        ...serviceEnv(),
        PCDS_MCP_TOKEN: ALICE,
        PCDS_TEMPORAL_ADDRESS: temporalAddress(),
        PCDS_TEMPORAL_NAMESPACE: testNamespace(),
        PCDS_TASK_QUEUE: taskQueue,
      });
      const alice = await sdkClient(mcp.url, ALICE);
      try {
        const cli = await pcds.startCall('person_enrichment', { email: rows[3].email });
        const seen = await until(
          alice,
          'call_status',
          { call_id: cli.workflowId },
          (d) => d.state !== 'running',
        );
        expect(seen).toMatchObject({ state: 'done', outcome: 'found' });
      } finally {
        await alice.close();
        await mcp.stop();
      }
      // A lone token named in PCDS_MCP_TOKENS is a caller, not the operator: it sees only its own.
      const named = await startMcp({
        ...serviceEnv(),
        PCDS_MCP_TOKENS: `ci:${BOB}`,
        PCDS_TEMPORAL_ADDRESS: temporalAddress(),
        PCDS_TEMPORAL_NAMESPACE: testNamespace(),
        PCDS_TASK_QUEUE: taskQueue,
      });
      const ci = await sdkClient(named.url, BOB);
      try {
        const cli = await pcds.startCall('person_enrichment', { email: rows[0].email });
        await cli.result();
        const hidden = await tool(ci, 'call_status', { call_id: cli.workflowId });
        expect(hidden.doc.error.code).toBe('call_not_found');
      } finally {
        await ci.close();
        await named.stop();
      }
    });
  });
});
