// `pcds mcp` driven by the official MCP SDK's Client: over Streamable HTTP against the server
// in-process (a real worker on the dev server, the emulator over HTTP), and over stdio against
// the built `pcds` command. Long work returns an id at once; the status tools follow it.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { startPcdsMcpHttp } from '../../src/mcp-server/http.js';
import { createPcdsMcpServer } from '../../src/mcp-server/tools.js';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { tempDir, uniqueBatchId, writeCsv } from '../batch/fixtures.js';
import { startCallEnv, withCallWorker, type CallEnv } from '../calls/call-env.js';
import { childEnv } from '../cli/cli-env.js';
import { temporalAddress, testEncryptionEnv, testNamespace } from '../harness/temporal.js';

const run = promisify(execFile);
const TOKEN = 'pcds-mcp-test-token-0123456789abcdef';
const tokens = [{ id: 'default', token: TOKEN }];
const bearer = { authorization: `Bearer ${TOKEN}` };
let env: CallEnv;
const dir = tempDir('pcds-mcp');
const rows = sampleRows({ rows: 6, withName: true });
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

type Doc = Record<string, any>;
async function tool(client: Client, name: string, args: Record<string, unknown>) {
  const r = await client.callTool({ name, arguments: args });
  const doc = JSON.parse((r.content as { text: string }[])[0].text) as Doc;
  return { doc, isError: r.isError === true };
}

async function until(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  done: (d: Doc) => boolean,
) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { doc } = await tool(client, name, args);
    if (done(doc)) return doc;
    if (Date.now() > deadline) throw new Error(`${name} never settled: ${JSON.stringify(doc)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('pcds mcp', () => {
  it('rule: over Streamable HTTP, a call, a batch (progress, pause, resume, summary), a search export and the usage each return at once and are followed by their status tools', async () => {
    await withCallWorker(env, async (pcds) => {
      const http = await startPcdsMcpHttp(
        () =>
          createPcdsMcpServer({
            version: '0.1.0',
            files: dir,
            client: () => Promise.resolve(pcds),
            usage: (q, keyId) => env.clients.get(keyId).usage(q),
          }),
        { port: 0, tokens },
      );
      const client = new Client({ name: 'test-assistant', version: '1.0.0' });
      try {
        await client.connect(
          new StreamableHTTPClientTransport(new URL(http.url), {
            requestInit: { headers: bearer },
          }),
        );
        const names = (await client.listTools()).tools.map((t) => t.name);
        expect(names).toEqual([
          'start_call',
          'call_status',
          'start_batch',
          'batch_status',
          'pause_batch',
          'resume_batch',
          'cancel_batch',
          'start_search_export',
          'search_export_status',
          'usage',
        ]);

        // One call.
        const started = await tool(client, 'start_call', {
          endpoint: 'person_enrichment',
          params: { email: rows[0].email },
        });
        expect(started.doc).toMatchObject({ state: 'running' });
        const call = await until(
          client,
          'call_status',
          { call_id: started.doc.call_id },
          (d) => d.state !== 'running',
        );
        expect(call).toMatchObject({ state: 'done', outcome: 'found', status: 'completed' });
        // Spaces around the email: sent trimmed (the emulator refuses them as sent).
        const spaced = await tool(client, 'start_call', {
          endpoint: 'person_enrichment',
          params: { email: ` ${rows[1].email}\t` },
        });
        expect(
          await until(
            client,
            'call_status',
            { call_id: spaced.doc.call_id },
            (d) => d.state !== 'running',
          ),
        ).toMatchObject({ state: 'done', outcome: 'found' });
        const bad = await tool(client, 'start_call', { endpoint: 'person_enrichment', params: {} });
        expect(bad.isError).toBe(true);
        expect(bad.doc.error.code).toBe('invalid_params');
        const missing = await tool(client, 'call_status', {
          call_id: 'call-person_enrichment-none',
        });
        expect(missing.isError).toBe(true);
        expect(missing.doc.error.code).toBe('call_not_found');

        // The input's encoding is the batch's to name: one the reader cannot use is refused.
        const utf16 = await tool(client, 'start_batch', {
          input,
          output: join(dir, 'utf16.jsonl'),
          encoding: 'utf-16le',
        });
        expect(utf16.isError).toBe(true);
        expect(utf16.doc.error).toMatchObject({
          code: 'invalid_options',
          message: expect.stringMatching(/utf-16le does not write line ends/),
        });

        // A batch, paused and resumed.
        const batchId = uniqueBatchId('mcp');
        const output = join(dir, `${batchId}.jsonl`);
        const batch = await tool(client, 'start_batch', {
          input,
          output,
          batch_id: batchId,
          window: 1,
          key_ids: [env.emulator.devKey.id],
        });
        expect(batch.doc).toEqual({ batch_id: batchId, state: 'running' });
        expect(
          (await tool(client, 'pause_batch', { batch_id: batchId, reason: 'check' })).doc,
        ).toEqual({
          batch_id: batchId,
          requested: 'pause',
        });
        const paused = await until(
          client,
          'batch_status',
          { batch_id: batchId },
          (d) => d.progress?.state === 'paused',
        );
        expect(paused.state).toBe('running');
        await tool(client, 'resume_batch', { batch_id: batchId });
        const ended = await until(
          client,
          'batch_status',
          { batch_id: batchId },
          (d) => d.state !== 'running',
        );
        expect(ended).toMatchObject({
          state: 'done',
          summary: { total: rows.length, done: rows.length },
        });
        expect(readFileSync(output, 'utf8').trim().split('\n')).toHaveLength(rows.length);

        // A search export.
        const exportId = uniqueBatchId('mcpexport');
        const exportOut = join(dir, `${exportId}.jsonl`);
        const exp = await tool(client, 'start_search_export', {
          params: { query: 'engineer' },
          max_results: 12,
          page_size: 5,
          output: exportOut,
          export_id: exportId,
        });
        expect(exp.doc).toEqual({ export_id: exportId, state: 'running' });
        const exported = await until(
          client,
          'search_export_status',
          { export_id: exportId },
          (d) => d.state !== 'running',
        );
        // The file is named as the tools take it: relative to the file root.
        expect(exported).toMatchObject({
          state: 'done',
          summary: { rows: 12, output: `${exportId}.jsonl` },
        });

        // The usage reflects the work.
        const usage = await tool(client, 'usage', {});
        expect(usage.doc.requests_count.total).toBeGreaterThan(0);
      } finally {
        await client.close();
        await http.close();
      }
    });
  });

  it('rule: over stdio, the built `pcds mcp` lists its tools, reads the usage and starts a call that call_status follows to its end', async () => {
    await withCallWorker(env, async (_pcds, taskQueue) => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [join(projectRoot(), 'bin', 'pcds.mjs'), 'mcp'],
        cwd: projectRoot(),
        env: childEnv({
          PCDS_BASE_URL: env.emulator.url,
          PCDS_API_KEY: env.emulator.devKey.key,
          PCDS_API_SECRET: env.emulator.devKey.secret,
          PCDS_THROTTLE: 'off',
          PCDS_POLL_INTERVAL_MS: '100',
          PCDS_TEMPORAL_ADDRESS: temporalAddress(),
          PCDS_TEMPORAL_NAMESPACE: testNamespace(),
          PCDS_TASK_QUEUE: taskQueue,
          ...testEncryptionEnv(),
        }) as Record<string, string>,
        stderr: 'pipe',
      });
      const client = new Client({ name: 'test-assistant', version: '1.0.0' });
      try {
        await client.connect(transport);
        expect((await client.listTools()).tools).toHaveLength(10);
        const usage = await tool(client, 'usage', {});
        expect(usage.isError).toBe(false);
        expect(usage.doc.period).toMatch(/^\d{4}-\d{2}$/);
        const started = await tool(client, 'start_call', {
          endpoint: 'person_enrichment',
          params: { email: rows[1].email },
        });
        const done = await until(
          client,
          'call_status',
          { call_id: started.doc.call_id },
          (d) => d.state !== 'running',
        );
        expect(done).toMatchObject({ state: 'done', outcome: 'found' });
      } finally {
        await client.close();
      }
    });
  });

  it('rule: the HTTP transport opens no event stream (GET is 405) and refuses a foreign Origin (403)', async () => {
    const http = await startPcdsMcpHttp(
      () =>
        createPcdsMcpServer({
          version: '0.1.0',
          client: () => Promise.reject(new Error('not needed')),
          usage: (q, keyId) => env.clients.get(keyId).usage(q),
        }),
      { port: 0, tokens },
    );
    try {
      const get = await fetch(http.url, { headers: { accept: 'text/event-stream', ...bearer } });
      expect(get.status).toBe(405);
      expect(get.headers.get('allow')).toBe('POST');
      const list = (origin?: string) =>
        fetch(http.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...bearer,
            ...(origin ? { origin } : {}),
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
      expect((await list('https://attacker.example.com')).status).toBe(403);
      // Another local page (another port) is another origin too.
      expect((await list('http://localhost:3000')).status).toBe(403);
      const ok = await list(new URL(http.url).origin);
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as { result: { tools: unknown[] } }).result.tools).toHaveLength(10);
    } finally {
      await http.close();
    }
  });

  it('rule: the MCP Inspector CLI (1.x) drives the built `pcds mcp` over stdio: tools listed with their task support, usage read', async () => {
    const cli = join(
      dirname(
        createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector-cli/package.json'),
      ),
      'build/cli.js',
    );
    const envArgs = Object.entries({
      PCDS_BASE_URL: env.emulator.url,
      PCDS_API_KEY: env.emulator.devKey.key,
      PCDS_API_SECRET: env.emulator.devKey.secret,
      // The emulator has no limits, so no throttle (and no Temporal) stands before GET /usage.
      PCDS_THROTTLE: 'off',
      PCDS_DATA_DIR: join(dir, 'inspected'),
      ...testEncryptionEnv(),
    }).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    const inspect = async (...args: string[]) => {
      const { stdout } = await run(
        process.execPath,
        [
          cli,
          '--cli',
          ...envArgs,
          process.execPath,
          join(projectRoot(), 'bin', 'pcds.mjs'),
          'mcp',
          ...args,
        ],
        // The CLI finds its own package.json at '../package.json' of the working directory.
        { cwd: dirname(cli), env: childEnv({}), timeout: 30_000 },
      );
      return JSON.parse(stdout.slice(stdout.indexOf('{'))) as Doc;
    };
    const listed = await inspect('--method', 'tools/list');
    const support = Object.fromEntries(
      (listed.tools as { name: string; execution?: { taskSupport?: string } }[]).map((t) => [
        t.name,
        t.execution?.taskSupport,
      ]),
    );
    // The start tools run as MCP tasks when the client asks; the others never do.
    expect(support).toEqual({
      start_call: 'optional',
      call_status: 'forbidden',
      start_batch: 'optional',
      batch_status: 'forbidden',
      pause_batch: 'forbidden',
      resume_batch: 'forbidden',
      cancel_batch: 'forbidden',
      start_search_export: 'optional',
      search_export_status: 'forbidden',
      usage: 'forbidden',
    });
    const usage = await inspect('--method', 'tools/call', '--tool-name', 'usage');
    expect(usage.isError).toBeFalsy();
    expect(usage.structuredContent.period).toMatch(/^\d{4}-\d{2}$/);
  });
});
