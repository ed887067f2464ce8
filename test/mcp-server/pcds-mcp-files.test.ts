// What an assistant can reach through `pcds mcp`: files only inside its file root (after `..`
// and symlinks, with one refusal whether a file exists or not), no file content quoted back, no
// file truncated without overwrite, and no result sent to a callback_url of its choice. Driven
// by the official MCP SDK's Client, in-process and over stdio against the built `pcds mcp`, with
// a real worker on the dev server and the emulator over HTTP (loopback callbacks allowed, so a
// callback that got through would arrive).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import type { PcdsClient } from '../../src/client.js';
import { createPcdsMcpServer } from '../../src/mcp-server/tools.js';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { tempDir, uniqueBatchId, writeCsv } from '../batch/fixtures.js';
import { startCallEnv, withCallWorker, type CallEnv } from '../calls/call-env.js';
import { childEnv } from '../cli/cli-env.js';
import { temporalAddress, testEncryptionEnv, testNamespace } from '../harness/temporal.js';

type Doc = Record<string, any>;
const base = realpathSync(tempDir('pcds-mcp-files'));
const root = join(base, 'root');
const outside = join(base, 'outside');
mkdirSync(root);
mkdirSync(outside);
const rows = sampleRows({ rows: 3, withName: true });
const people = writeCsv(root, 'people.csv', rows as unknown as Record<string, string>[], [
  'email',
  'name',
]);
// The same file outside the root, and one whose header holds secret-looking cells.
const outsidePeople = join(outside, 'people.csv');
writeFileSync(outsidePeople, readFileSync(people));
const SECRET_CELLS = ['AKIAIOSFODNN7EXAMPLE', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'];
const secretCsv = `email,${SECRET_CELLS.join(',')}\n${rows[0].email},x,y\n`;
writeFileSync(join(outside, 'keys.csv'), secretCsv);
writeFileSync(join(root, 'keys.csv'), secretCsv);
const victim = join(outside, 'victim.json');
const VICTIM = '{"keep": true}\n';
writeFileSync(victim, VICTIM);

let env: CallEnv;
let listener: Server;
let listenerUrl: string;
const received: string[] = [];

beforeAll(async () => {
  env = await startCallEnv({ allowLoopbackCallbacks: true });
  listener = createServer((req, res) => {
    received.push(req.url ?? '');
    req.resume();
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  listenerUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await new Promise((resolve) => listener?.close(resolve));
  await env?.stop();
});

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

/** The MCP server in-process, its root `root`, its client connected over an in-memory pair. */
async function withMcp(fn: (client: Client, pcds: PcdsClient) => Promise<void>) {
  await withCallWorker(env, async (pcds) => {
    const server = createPcdsMcpServer({
      version: '0.1.0',
      files: root,
      client: () => Promise.resolve(pcds),
      usage: (q, keyId) => env.clients.get(keyId).usage(q),
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'test-assistant', version: '1.0.0' });
    await client.connect(clientSide);
    try {
      await fn(client, pcds);
    } finally {
      await client.close();
      await server.close();
    }
  });
}

const NOT_IN_ROOT = (role: string) =>
  `${role}: not a path inside the file root of pcds mcp (PCDS_MCP_FILES): give a path relative to it`;

describe('pcds mcp: the file root', () => {
  it('rule: inputs and outputs outside the root (`..`, absolute, a symlink leading out) are refused with one message whether the file exists or not; nothing outside is read, created or truncated', async () => {
    await withMcp(async (client) => {
      const start = (input: string, output: string, extra: Record<string, unknown> = {}) =>
        tool(client, 'start_batch', {
          input,
          output,
          batch_id: uniqueBatchId('mcpfiles'),
          key_ids: [env.emulator.devKey.id],
          ...extra,
        });
      symlinkSync(outsidePeople, join(root, 'link-out.csv'));
      symlinkSync(outside, join(root, 'dir-out'));
      const refusedInputs = [
        '../outside/people.csv',
        '../outside/missing.csv',
        outsidePeople,
        join(outside, 'missing.csv'),
        '/etc/passwd',
        '/etc/no-such-file.csv',
        join(outside, 'keys.csv'),
        'link-out.csv',
        'dir-out/people.csv',
        'dir-out/missing.csv',
      ];
      for (const input of refusedInputs) {
        const r = await start(input, 'never.jsonl');
        expect(r.isError, input).toBe(true);
        expect(r.doc.error, input).toEqual({
          code: 'path_not_allowed',
          message: NOT_IN_ROOT('input'),
        });
      }
      const refusedOutputs: [string, Record<string, unknown>][] = [
        [join(outside, 'new.jsonl'), {}],
        ['../outside/new.jsonl', {}],
        [`${root}/examples/../../outside/victim.json`, { overwrite: true }],
        [victim, { overwrite: true }],
        ['dir-out/new.jsonl', {}],
        ['dir-out/victim.json', { overwrite: true }],
      ];
      for (const [output, extra] of refusedOutputs) {
        const r = await start('people.csv', output, extra);
        expect(r.doc.error, output).toEqual({
          code: 'path_not_allowed',
          message: NOT_IN_ROOT('output'),
        });
      }
      const exportOutside = await tool(client, 'start_search_export', {
        params: { query: 'engineer' },
        max_results: 5,
        output: join(outside, 'export.jsonl'),
      });
      expect(exportOutside.doc.error).toEqual({
        code: 'path_not_allowed',
        message: NOT_IN_ROOT('output'),
      });
      const exportOver = await tool(client, 'start_search_export', {
        params: { query: 'engineer' },
        max_results: 5,
        output: '../outside/victim.json',
        overwrite: true,
      });
      expect(exportOver.doc.error?.code).toBe('path_not_allowed');

      expect(readFileSync(victim, 'utf8')).toBe(VICTIM);
      for (const f of ['new.jsonl', 'export.jsonl', 'never.jsonl'])
        expect(existsSync(join(outside, f))).toBe(false);
      expect(existsSync(join(root, 'never.jsonl'))).toBe(false);
      expect(env.emulator.stats().jobsSubmitted).toBe(0);
    });
  });

  it('rule: relative paths are taken from the root; an existing output (even empty) is refused without overwrite and replaced with it; a file header is never quoted', async () => {
    await withMcp(async (client) => {
      const batchId = uniqueBatchId('mcpfiles');
      const started = await tool(client, 'start_batch', {
        input: 'people.csv',
        output: 'runs/first.jsonl',
        batch_id: batchId,
        key_ids: [env.emulator.devKey.id],
      });
      expect(started.doc).toEqual({ batch_id: batchId, state: 'running' });
      const ended = await until(
        client,
        'batch_status',
        { batch_id: batchId },
        (d) => d.state !== 'running',
      );
      expect(ended).toMatchObject({
        state: 'done',
        summary: {
          total: rows.length,
          found: rows.length,
          // Files are named as the tools take them: relative to the root.
          output: join('runs', 'first.jsonl'),
          source: { path: 'people.csv' },
        },
      });
      // No answer shows where the server keeps the root.
      expect(JSON.stringify(ended)).not.toContain(base);
      const first = join(root, 'runs', 'first.jsonl');
      expect(readFileSync(first, 'utf8').trim().split('\n')).toHaveLength(rows.length);

      // A file there, with lines or empty, is not the tool's to truncate.
      writeFileSync(join(root, 'runs', 'empty.jsonl'), '');
      for (const output of [
        'runs/first.jsonl',
        'runs/empty.jsonl',
        join(root, 'runs', 'first.jsonl'),
      ]) {
        const r = await tool(client, 'start_batch', {
          input: 'people.csv',
          output,
          key_ids: [env.emulator.devKey.id],
        });
        expect(r.doc.error?.code, output).toBe('output_exists');
      }
      const exported = await tool(client, 'start_search_export', {
        params: { query: 'engineer' },
        max_results: 5,
        output: 'runs/first.jsonl',
      });
      expect(exported.doc.error?.code).toBe('output_exists');
      expect(readFileSync(first, 'utf8').trim().split('\n')).toHaveLength(rows.length);

      // With overwrite, a file inside the root is replaced.
      writeFileSync(join(root, 'runs', 'old.jsonl'), 'an old line\n'.repeat(10));
      const againId = uniqueBatchId('mcpfiles');
      await tool(client, 'start_batch', {
        input: 'people.csv',
        output: 'runs/old.jsonl',
        batch_id: againId,
        overwrite: true,
        key_ids: [env.emulator.devKey.id],
      });
      const again = await until(
        client,
        'batch_status',
        { batch_id: againId },
        (d) => d.state !== 'running',
      );
      expect(again).toMatchObject({ state: 'done', summary: { total: rows.length } });
      const replaced = readFileSync(join(root, 'runs', 'old.jsonl'), 'utf8');
      expect(replaced).not.toContain('an old line');
      expect(replaced.trim().split('\n')).toHaveLength(rows.length);

      // A header with secret-looking cells: refused, nothing quoted, nothing left.
      const keys = await tool(client, 'start_batch', {
        input: 'keys.csv',
        output: 'runs/keys.jsonl',
        key_ids: [env.emulator.devKey.id],
      });
      expect(keys.doc.error.code).toBe('invalid_input_file');
      expect(keys.doc.error.message).toMatch(
        /^the input's header does not fit person_enrichment: each column must be a parameter/,
      );
      for (const cell of SECRET_CELLS) expect(JSON.stringify(keys.doc)).not.toContain(cell);
      expect(existsSync(join(root, 'runs', 'keys.jsonl'))).toBe(false);

      // A map is no oracle of the header: a guess that names a column of it and one that does
      // not get the same answer (and so does a header with columns that are no parameter).
      const mapped = async (input: string, map: string) =>
        (
          await tool(client, 'start_batch', {
            input,
            output: `runs/mapped-${uniqueBatchId('m')}.jsonl`,
            map,
            key_ids: [env.emulator.devKey.id],
          })
        ).doc;
      const guesses = [
        await mapped('keys.csv', `name=${SECRET_CELLS[0]}`),
        await mapped('keys.csv', 'name=not a column'),
        await mapped('people.csv', 'name=not a column'),
        await mapped('people.csv', 'email=name'),
      ];
      for (const g of guesses) expect(g.error?.code).toBe('invalid_input_file');
      expect(new Set(guesses.map((g) => g.error.message)).size).toBe(1);
      expect(guesses[0].error.message).toMatch(/^the input's header does not fit .* with this map/);
      // What the map alone gets wrong is said in full: it tells nothing of the file.
      const notParam = await mapped('keys.csv', 'nickname=whatever');
      expect(notParam.error.message).toBe(
        '--map: "nickname" is not a parameter of person_enrichment',
      );

      // A search export into the root, by a relative path.
      const exportId = uniqueBatchId('mcpfilesexport');
      await tool(client, 'start_search_export', {
        params: { query: 'engineer' },
        max_results: 4,
        output: 'exports/engineers.jsonl',
        export_id: exportId,
      });
      const done = await until(
        client,
        'search_export_status',
        { export_id: exportId },
        (d) => d.state !== 'running',
      );
      expect(done).toMatchObject({
        state: 'done',
        summary: { rows: 4, output: join('exports', 'engineers.jsonl') },
      });
      expect(JSON.stringify(done)).not.toContain(base);
    });
  });
});

describe('pcds mcp: no callbacks of the caller', () => {
  it('rule: start_call and start_search_export refuse params.callback_url; a batch refuses a callback_url column at start and fails a JSONL row that sets one; nothing reaches the listener', async () => {
    await withMcp(async (client) => {
      const submitted = env.emulator.stats().jobsSubmitted;
      const call = await tool(client, 'start_call', {
        endpoint: 'person_enrichment',
        params: { email: rows[0].email, callback_url: listenerUrl },
      });
      expect(call.isError).toBe(true);
      expect(call.doc.error.code).toBe('callback_not_allowed');
      expect(call.doc.error.message).not.toContain(listenerUrl);
      const exp = await tool(client, 'start_search_export', {
        params: { query: 'engineer', callback_url: listenerUrl },
        max_results: 5,
        output: 'exports/never.jsonl',
      });
      expect(exp.doc.error.code).toBe('callback_not_allowed');
      expect(existsSync(join(root, 'exports', 'never.jsonl'))).toBe(false);
      expect(env.emulator.stats().jobsSubmitted).toBe(submitted);

      writeFileSync(
        join(root, 'with-callback.csv'),
        `email,callback_url\n${rows[0].email},${listenerUrl}\n`,
      );
      const csv = await tool(client, 'start_batch', {
        input: 'with-callback.csv',
        output: 'runs/with-callback.jsonl',
        key_ids: [env.emulator.devKey.id],
      });
      // The one answer to a header that does not fit (it names the rule, not the column).
      expect(csv.doc.error).toMatchObject({
        code: 'invalid_input_file',
        message: expect.stringMatching(
          /^the input's header does not fit .* none may be callback_url/,
        ),
      });

      // JSONL: only the first object's keys are checked at start; a later row is failed alone.
      writeFileSync(
        join(root, 'with-callback.jsonl'),
        [
          { email: rows[0].email },
          { email: rows[1].email, callback_url: listenerUrl },
          { email: rows[2].email },
        ]
          .map((r) => JSON.stringify(r))
          .join('\n') + '\n',
      );
      const batchId = uniqueBatchId('mcpcallback');
      await tool(client, 'start_batch', {
        input: 'with-callback.jsonl',
        output: 'runs/jsonl-callback.jsonl',
        batch_id: batchId,
        key_ids: [env.emulator.devKey.id],
      });
      const ended = await until(
        client,
        'batch_status',
        { batch_id: batchId },
        (d) => d.state !== 'running',
      );
      expect(ended).toMatchObject({
        state: 'done',
        summary: { total: 3, found: 2, failed: 1, failedByCode: { invalid_row: 1 } },
      });
      const lines = readFileSync(join(root, 'runs', 'jsonl-callback.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Doc);
      expect(lines.find((l) => l.row === 2)).toMatchObject({
        outcome: 'failed',
        code: 'invalid_row',
      });
      expect(env.emulator.stats().jobsSubmitted).toBe(submitted + 2);
      // Time for a delivery that got through to arrive (the emulator delivers at completion).
      await new Promise((r) => setTimeout(r, 500));
      expect(received).toEqual([]);
      expect(env.emulator.stats().webhookDeliveries).toBe(0);
    });
  });
});

describe('pcds mcp over stdio', () => {
  it('rule: the built `pcds mcp` takes its root from PCDS_MCP_FILES: a relative output lands there, a path out of it is refused', async () => {
    const filesRoot = join(base, 'stdio-root');
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
          // Its calls and batches count what is sent: the result cache would answer some.
          PCDS_CACHE: 'off',
          PCDS_POLL_INTERVAL_MS: '100',
          PCDS_TEMPORAL_ADDRESS: temporalAddress(),
          PCDS_TEMPORAL_NAMESPACE: testNamespace(),
          PCDS_TASK_QUEUE: taskQueue,
          PCDS_MCP_FILES: filesRoot,
          ...testEncryptionEnv(),
        }) as Record<string, string>,
        stderr: 'pipe',
      });
      const client = new Client({ name: 'test-assistant', version: '1.0.0' });
      try {
        await client.connect(transport);
        const out = await tool(client, 'start_search_export', {
          params: { query: 'engineer' },
          max_results: 3,
          output: '../outside/stdio.jsonl',
        });
        expect(out.doc.error).toEqual({ code: 'path_not_allowed', message: NOT_IN_ROOT('output') });
        const exportId = uniqueBatchId('mcpstdio');
        await tool(client, 'start_search_export', {
          params: { query: 'engineer' },
          max_results: 3,
          output: 'engineers.jsonl',
          export_id: exportId,
        });
        const done = await until(
          client,
          'search_export_status',
          { export_id: exportId },
          (d) => d.state !== 'running',
        );
        expect(done).toMatchObject({ state: 'done', summary: { rows: 3 } });
        expect(
          readFileSync(join(filesRoot, 'engineers.jsonl'), 'utf8').trim().split('\n'),
        ).toHaveLength(3);
        expect(existsSync(join(outside, 'stdio.jsonl'))).toBe(false);
      } finally {
        await client.close();
      }
    });
  });
});
