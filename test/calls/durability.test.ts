// A worker killed mid-poll: the call completes once a new worker starts, with one submit.
// And credentials never reach a finished workflow's history.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPcdsClient } from '../../src/client.js';
import { sampleRows } from '../../src/emulator/index.js';
import {
  connectClient,
  decodedHistory,
  testNamespace,
  uniqueTaskQueue,
} from '../harness/temporal.js';
import { spawnWorkerProcess } from '../harness/worker-process.js';
import { historyText, startCallEnv, TEST_KEYS, withCallWorker, type CallEnv } from './call-env.js';

let env: CallEnv;

const knownEmail = sampleRows({ rows: 1 })[0].email;

beforeAll(async () => {
  // Jobs take 12 s: long enough to kill a worker while the call polls.
  env = await startCallEnv({ timeScale: 1, latency: { queuedMs: 0, processingMs: 12_000 } });
});
afterAll(async () => {
  await env?.stop();
});

/** `node dist/worker.js` on a task queue; resolves when it polls. */
function spawnWorker(taskQueue: string): Promise<ChildProcess> {
  return spawnWorkerProcess(taskQueue, {
    PCDS_BASE_URL: env.config.PCDS_BASE_URL,
    PCDS_API_KEYS: JSON.stringify(env.config.keys),
    PCDS_HTTP_TIMEOUT_MS: '3000',
    PCDS_THROTTLE: 'off',
  });
}

// Each child worker loads the run's workflow bundle (test/harness workflowBundleEnv) instead of bundling at start.
it('completes a call once a new worker starts after the first was killed mid-poll', async () => {
  const taskQueue = uniqueTaskQueue('restart');
  const { connection } = await connectClient();
  const client = await createPcdsClient({
    connection,
    namespace: testNamespace(),
    taskQueue,
    defaults: { pollIntervalMs: 500, maxWaitMs: 120_000, cache: false },
  });
  let second: ChildProcess | undefined;
  try {
    const first = await spawnWorker(taskQueue);
    const from = Date.now();
    const handle = await client.startCall('person_enrichment', { email: knownEmail });
    await expect
      .poll(async () => (await handle.state()).polls, { timeout: 30_000, interval: 250 })
      .toBeGreaterThanOrEqual(2);
    first.kill('SIGKILL');
    await once(first, 'exit');
    const pollsAtKill = env.proxy.seen('GET /person/enrichment').filter((s) => s.at >= from).length;
    second = await spawnWorker(taskQueue);
    const out = await handle.result();
    expect(out.outcome).toBe('found');
    // Polling went on under the new worker; the job was submitted once.
    expect(
      env.proxy.seen('GET /person/enrichment').filter((s) => s.at >= from).length,
    ).toBeGreaterThan(pollsAtKill);
    expect(env.proxy.seen('POST /person/enrichment').filter((s) => s.at >= from)).toHaveLength(1);
  } finally {
    second?.kill('SIGTERM');
    if (second && second.exitCode === null) await once(second, 'exit');
    await client.close();
    await connection.close();
  }
}, 180_000);

it('keeps keys and secrets out of a finished workflow history', async () => {
  await withCallWorker(env, async (client) => {
    const handle = await client.startCall(
      'person_enrichment',
      { email: knownEmail },
      { keyId: TEST_KEYS.broke.id },
    );
    await handle.result().catch(() => undefined);
    const ok = await client.startCall('person_enrichment', { email: knownEmail });
    await ok.result();
    for (const h of [handle, ok]) {
      const history = historyText(await decodedHistory(await h.workflow.fetchHistory()));
      // The decoding works: the input's email (a payload) is readable in the text.
      expect(history).toContain(knownEmail);
      for (const k of env.config.keys) {
        expect(history).not.toContain(k.key);
        expect(history).not.toContain(k.secret);
      }
    }
  });
});
