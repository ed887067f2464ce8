// The emulator's MCP endpoint driven by the MCP Inspector's CLI (1.x, the line that runs on
// Node 20; its CLI package alone, without the web client, which declares Node 22) over Streamable
// HTTP, as a developer would try it by hand.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_DATA_TOOLS } from '../../src/contract/index.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { sleep, start } from './helpers.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const CLI = join(
  dirname(require.resolve('@modelcontextprotocol/inspector-cli/package.json')),
  'build/cli.js',
);

async function inspector(
  em: RunningEmulator,
  args: string[],
  credentials = true,
): Promise<{ ok: boolean; out: string }> {
  const headers = credentials
    ? ['--header', `X-API-Key: ${em.devKey.key}`, '--header', `X-API-Secret: ${em.devKey.secret}`]
    : [];
  try {
    const { stdout } = await run(
      process.execPath,
      [CLI, '--cli', `${em.url}/mcp`, '--transport', 'http', ...args, ...headers],
      // The CLI finds its own package.json at '../package.json' of the working directory.
      { cwd: dirname(CLI), timeout: 30_000 },
    );
    return { ok: true, out: stdout };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    return { ok: false, out: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

/** The JSON document of a tool result printed by the CLI. */
const docOf = (out: string) =>
  JSON.parse(
    (JSON.parse(out.slice(out.indexOf('{'))) as { content: { text: string }[] }).content[0].text,
  );

let em: RunningEmulator;
beforeAll(async () => {
  em = await start();
});
afterAll(() => em.stop());

describe('MCP endpoint with the MCP Inspector CLI', () => {
  it('rule: the Inspector lists the tools without credentials', async () => {
    const r = await inspector(em, ['--method', 'tools/list'], false);
    expect(r.ok, r.out).toBe(true);
    const listed = JSON.parse(r.out.slice(r.out.indexOf('{'))) as { tools: { name: string }[] };
    expect(listed.tools.map((t) => t.name)).toEqual([...MCP_DATA_TOOLS, 'check_status']);
  });

  it('rule: with the key pair in headers the Inspector starts a search and reads it to complete through check_status; without credentials the call fails with the 401', async () => {
    const started = await inspector(em, [
      '--method',
      'tools/call',
      '--tool-name',
      'person_search',
      '--tool-arg',
      'query=engineer',
    ]);
    expect(started.ok, started.out).toBe(true);
    const doc = docOf(started.out);
    expect(doc).toMatchObject({ status: 'pending', endpoint: 'person_search' });
    let status: any;
    for (let i = 0; i < 20; i++) {
      const r = await inspector(em, [
        '--method',
        'tools/call',
        '--tool-name',
        'check_status',
        '--tool-arg',
        `request_id=${doc.request_id}`,
      ]);
      expect(r.ok, r.out).toBe(true);
      status = docOf(r.out);
      if (status.status !== 'pending') break;
      await sleep(200);
    }
    expect(status.status).toBe('complete');
    expect(Array.isArray(status.data.results)).toBe(true);

    const anonymous = await inspector(
      em,
      ['--method', 'tools/call', '--tool-name', 'check_status', '--tool-arg', 'request_id=x_1_1'],
      false,
    );
    expect(anonymous.ok).toBe(false);
    expect(anonymous.out).toContain('missing_credentials');
  });
});
