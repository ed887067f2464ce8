// `pcds mcp --transport http` as the built command, for tests: a process on a free port, and its
// callers, the official MCP SDK client and raw JSON-RPC over HTTP.
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { childEnv } from '../cli/cli-env.js';
import { testEncryptionEnv } from '../harness/temporal.js';

const PCDS_BIN = join(projectRoot(), 'bin', 'pcds.mjs');

export interface McpProcess {
  url: URL;
  stderr(): string;
  /** SIGTERM, and the process's exit. */
  stop(): Promise<void>;
  /** The signal given (default SIGTERM), and the process's exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * The settings of a `pcds mcp` for a test: the emulator's dev key (throttle off), fast polls,
 * the payload key, and the file root.
 */
export function mcpServiceEnv(
  emulator: { url: string; devKey: { key: string; secret: string } },
  files: string,
): Record<string, string> {
  return {
    PCDS_BASE_URL: emulator.url,
    PCDS_API_KEY: emulator.devKey.key,
    PCDS_API_SECRET: emulator.devKey.secret,
    PCDS_THROTTLE: 'off',
    PCDS_POLL_INTERVAL_MS: '100',
    // The tools read and write only inside their file root: the test's folder.
    PCDS_MCP_FILES: files,
    ...testEncryptionEnv(),
  };
}

/** Starts the built `pcds mcp --transport http` on a free port; resolves once it listens. */
export function startMcp(vars: Record<string, string>, args: string[] = []): Promise<McpProcess> {
  const child: ChildProcess = spawn(
    process.execPath,
    [PCDS_BIN, 'mcp', '--transport', 'http', '--port', '0', ...args],
    { cwd: projectRoot(), env: childEnv(vars), stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      const m = /Streamable HTTP at (\S+)/.exec(err);
      if (m)
        resolve({
          url: new URL(m[1]),
          stderr: () => err,
          stop: async () => {
            child.kill('SIGTERM');
            await exited;
          },
          kill: async (signal = 'SIGTERM') => {
            child.kill(signal);
            await exited;
          },
        });
    });
    child.once('exit', (code) => reject(new Error(`pcds mcp exited (${code}): ${err}`)));
  });
}

/** `pcds mcp` run to its end (a start that is refused). */
export function runMcp(vars: Record<string, string>, args: string[]) {
  const child = spawn(process.execPath, [PCDS_BIN, 'mcp', '--transport', 'http', ...args], {
    cwd: projectRoot(),
    env: childEnv(vars),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.once('exit', (code) => resolve({ code, stderr })),
  );
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * A raw JSON-RPC POST with exactly the headers given (Host included); a tools/call calls `usage`
 * unless `call` names the tool and its arguments.
 */
export function raw(
  url: URL,
  headers: Record<string, string>,
  method = 'tools/list',
  call: { name: string; arguments: Record<string, unknown> } = { name: 'usage', arguments: {} },
): Promise<RawAnswer> {
  const body =
    method === 'initialize'
      ? {
          jsonrpc: '2.0',
          id: 1,
          method,
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'raw', version: '1' },
          },
        }
      : method === 'tools/call'
        ? { jsonrpc: '2.0', id: 1, method, params: call }
        : { jsonrpc: '2.0', id: 1, method };
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

export async function sdkClient(url: URL, token?: string): Promise<Client> {
  const client = new Client({ name: 'test-assistant', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(url, {
      requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
    }),
  );
  return client;
}

export type Doc = Record<string, any>;
export interface ToolAnswer {
  doc: Doc;
  isError: boolean;
}

/** Calls a tool with the SDK client, or with raw JSON-RPC posts (url and bearer token). */
export async function tool(
  client: Client | RawCaller,
  name: string,
  args: Record<string, unknown>,
): Promise<ToolAnswer> {
  if (!(client instanceof Client)) return rawTool(client, name, args);
  const r = await client.callTool({ name, arguments: args });
  return {
    doc: JSON.parse((r.content as { text: string }[])[0].text) as Doc,
    isError: r.isError === true,
  };
}

/** A caller that speaks raw JSON-RPC: no SDK, no session, one POST per tool call. */
export interface RawCaller {
  url: URL;
  token: string;
}

async function rawTool(
  caller: RawCaller,
  name: string,
  args: Record<string, unknown>,
): Promise<ToolAnswer> {
  const answer = await raw(caller.url, { authorization: `Bearer ${caller.token}` }, 'tools/call', {
    name,
    arguments: args,
  });
  if (answer.status !== 200) throw new Error(`tools/call ${name}: HTTP ${answer.status}`);
  const reply = JSON.parse(answer.body) as {
    result?: { content: { text: string }[]; isError?: boolean };
    error?: { message: string };
  };
  if (!reply.result) throw new Error(`tools/call ${name}: ${reply.error?.message}`);
  return {
    doc: JSON.parse(reply.result.content[0].text) as Doc,
    isError: reply.result.isError === true,
  };
}

export async function until(
  client: Client | RawCaller,
  name: string,
  args: Record<string, unknown>,
  done: (d: Doc) => boolean,
  timeoutMs = 30_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { doc } = await tool(client, name, args);
    if (done(doc)) return doc;
    if (Date.now() > deadline) throw new Error(`${name} never settled: ${JSON.stringify(doc)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
