// The emulator's MCP endpoint driven by the MCP Python SDK (PyPI `mcp`, pinned, installed on
// first use into .tools/mcp-python-venv): its ClientSession over Streamable HTTP with the key pair.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_DATA_TOOLS } from '../../src/contract/index.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { pinnedVenv } from '../harness/python-venv.js';
import { start } from './helpers.js';

const run = promisify(execFile);
const MCP_PYTHON_VERSION = '2.3.0';

let em: RunningEmulator;
let python: string;
beforeAll(async () => {
  python = join(await pinnedVenv('mcp-python-venv', 'mcp', MCP_PYTHON_VERSION), 'bin', 'python');
  em = await start();
}, 180_000);
afterAll(() => em?.stop());

describe('MCP endpoint with the MCP Python SDK', () => {
  it('rule: the Python ClientSession initializes at 2025-06-18, lists the tools, pings, and runs a search to complete through check_status', async () => {
    const { stdout } = await run(
      python,
      [
        join(import.meta.dirname, 'fixtures', 'mcp_python_client.py'),
        `${em.url}/mcp`,
        em.devKey.key,
        em.devKey.secret,
      ],
      { timeout: 30_000 },
    );
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({
      protocol: '2025-06-18',
      tools: [...MCP_DATA_TOOLS, 'check_status'],
      started: 'pending',
      status: 'complete',
      rows: 10,
    });
  });
});
