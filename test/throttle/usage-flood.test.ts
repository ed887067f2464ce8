// GET /usage takes a permit from the shared throttle like every request: 130 `usage` tool calls
// at once to the built `pcds mcp` (over stdio, with the MCP SDK's client) against the emulator's
// real limits (100 a minute, 1,000 an hour, every duration scaled alike) draw no 429, and the
// key's throttle counts each of them; so do `pcds usage` and the cost note of `pcds batch start`.
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { readThrottleStatus } from '../../src/client/throttle-operator.js';
import { tempDir, writeCsv } from '../batch/fixtures.js';
import { childEnv, runCli } from '../cli/cli-env.js';
import { temporalAddress, testNamespace, uniqueTaskQueue } from '../harness/temporal.js';
import { emails, startLimitedEmulator, throttledEnv, withThrottledWorker } from './env.js';

/** The service's own limits, 10 times faster: a "minute" of 6 s. */
const LIMITS = { perMinute: 100, perHour: 1000 };
const SCALE = 10;
const FLOOD = 130;
let emulator: RunningEmulator;

beforeAll(async () => {
  emulator = await startLimitedEmulator(LIMITS, SCALE);
});
afterAll(async () => {
  await emulator?.stop();
});

it('rule: a flood of usage reads through pcds mcp, pcds usage and batch start draws no 429: each takes a throttle permit', async () => {
  const taskQueue = uniqueTaskQueue('usage-flood');
  const keyId = `key-${taskQueue}`;
  const env = {
    ...throttledEnv(emulator, LIMITS, keyId, SCALE),
    PCDS_TEMPORAL_ADDRESS: temporalAddress(),
    PCDS_TEMPORAL_NAMESPACE: testNamespace(),
    PCDS_TASK_QUEUE: taskQueue,
    PCDS_POLL_INTERVAL_MS: '200',
  };
  const devKey = emulator.devKey.id;
  await withThrottledWorker(loadConfig(env), taskQueue, async (temporal) => {
    const usageCount = async () =>
      (await readThrottleStatus(temporal, [keyId]))[0].snapshot.counts.usage;
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(projectRoot(), 'bin', 'pcds.mjs'), 'mcp'],
      cwd: projectRoot(),
      env: childEnv(env) as Record<string, string>,
      stderr: 'pipe',
    });
    const assistant = new Client({ name: 'test-assistant', version: '1.0.0' });
    try {
      await assistant.connect(transport);
      const replies = await Promise.all(
        Array.from({ length: FLOOD }, () =>
          assistant.callTool({ name: 'usage', arguments: {} }, undefined, { timeout: 50_000 }),
        ),
      );
      const failed = replies.filter((r) => r.isError);
      expect(failed.map((r) => (r.content as { text: string }[])[0].text)).toEqual([]);
    } finally {
      await assistant.close();
    }
    const stats = emulator.stats(devKey);
    expect(stats.rateLimited).toBe(0);
    expect(stats.requests['GET /usage']).toBe(FLOOD);
    expect(await usageCount()).toBe(FLOOD);

    const usage = await runCli(['usage'], env);
    expect(usage.code, usage.stderr).toBe(0);
    expect(JSON.parse(usage.stdout)).toMatchObject({ period: expect.stringMatching(/^\d{4}-\d/) });
    expect(await usageCount()).toBe(FLOOD + 1);

    const dir = tempDir('usage-flood');
    const input = writeCsv(dir, 'leads.csv', [{ email: emails(1)[0] }], ['email']);
    const batch = await runCli(
      ['batch', 'start', '-i', input, '-o', join(dir, 'out.jsonl'), '--keys', keyId],
      env,
    );
    expect(batch.code, batch.stderr).toBe(0);
    expect(batch.stderr).not.toContain('could not read GET /usage');
    expect(await usageCount()).toBe(FLOOD + 2);
    expect(emulator.stats(devKey).rateLimited).toBe(0);
  });
});

it('rule: without Temporal the usage reads say so (temporal_unreachable) instead of bypassing the throttle', async () => {
  const env = {
    ...throttledEnv(emulator, LIMITS, 'key-no-temporal', SCALE),
    PCDS_TEMPORAL_ADDRESS: '127.0.0.1:1',
  };
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(projectRoot(), 'bin', 'pcds.mjs'), 'mcp'],
    cwd: projectRoot(),
    env: childEnv(env) as Record<string, string>,
    stderr: 'pipe',
  });
  const assistant = new Client({ name: 'test-assistant', version: '1.0.0' });
  const before = emulator.stats(emulator.devKey.id).requests['GET /usage'] ?? 0;
  try {
    await assistant.connect(transport);
    const reply = await assistant.callTool({ name: 'usage', arguments: {} });
    expect(reply.isError).toBe(true);
    const doc = JSON.parse((reply.content as { text: string }[])[0].text) as {
      error: { code: string; message: string };
    };
    expect(doc.error.code).toBe('temporal_unreachable');
    expect(doc.error.message).toContain('cannot reach Temporal at 127.0.0.1:1');
  } finally {
    await assistant.close();
  }
  const cli = await runCli(['usage'], env);
  expect(cli.code).toBe(1);
  expect(cli.stderr).toMatch(
    /^error: cannot reach Temporal at 127\.0\.0\.1:1 .*\(temporal_unreachable\)$/m,
  );
  expect(emulator.stats(emulator.devKey.id).requests['GET /usage'] ?? 0).toBe(before);
});
