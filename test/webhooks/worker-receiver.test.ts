// The worker process runs the receiver when PCDS_WEBHOOK_* is set: a webhook call completes by
// delivery with no poll; a public URL the service would refuse stops the worker with the reason.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPcdsClient } from '../../src/client.js';
import { sampleRows } from '../../src/emulator/index.js';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import {
  connectClient,
  testTemporalEnv,
  testNamespace,
  uniqueTaskQueue,
  workflowBundleEnv,
} from '../harness/temporal.js';
import { WORKER_SCRIPT } from '../harness/worker-process.js';
import { freeListenPort } from '../harness/ports.js';
import { startWebhookEnv, type WebhookEnv } from './webhook-env.js';

let env: WebhookEnv;

beforeAll(async () => {
  env = await startWebhookEnv({ latency: { queuedMs: 0, processingMs: 10_000 } });
});
afterAll(async () => {
  await env?.stop();
});

function workerEnv(taskQueue: string, webhook: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...testTemporalEnv(),
    ...workflowBundleEnv(process.env),
    PCDS_TASK_QUEUE: taskQueue,
    PCDS_BASE_URL: env.config.PCDS_BASE_URL,
    PCDS_API_KEYS: JSON.stringify(env.config.keys),
    PCDS_THROTTLE: 'off',
    PCDS_WEBHOOK_SECRET: 'worker-receiver-test-secret',
    PCDS_WEBHOOK_HOST: '127.0.0.1',
    ...webhook,
  };
}

/** `node dist/worker.js`; resolves with its stderr once `ready` appears in it. */
async function spawnWorker(
  vars: NodeJS.ProcessEnv,
  ready: string,
): Promise<{ child: ChildProcess; log: () => string }> {
  const child = spawn(process.execPath, [WORKER_SCRIPT], {
    cwd: projectRoot(),
    env: vars,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (d: Buffer) => {
      log += d.toString();
      if (log.includes(ready)) resolve();
    });
    child.once('exit', (code) =>
      reject(new Error(`worker exited (${code}) before "${ready}":\n${log}`)),
    );
  });
  return { child, log: () => log };
}

it('runs the receiver in the worker: a webhook call completes with no poll', async () => {
  const taskQueue = uniqueTaskQueue('worker-webhooks');
  const port = await freeListenPort();
  const { child } = await spawnWorker(
    workerEnv(taskQueue, {
      PCDS_WEBHOOK_PUBLIC_URL: `http://127.0.0.1:${port}`,
      PCDS_WEBHOOK_PORT: String(port),
      PCDS_WEBHOOK_ALLOW_LOOPBACK: 'true',
    }),
    'worker polling task queue',
  );
  const { connection } = await connectClient();
  const client = await createPcdsClient({
    connection,
    namespace: testNamespace(),
    taskQueue,
    defaults: { maxWaitMs: 60_000, webhookFallbackPollMs: 30_000, cache: false },
  });
  try {
    const from = Date.now();
    const out = await client.call(
      'person_enrichment',
      { email: sampleRows({ rows: 1 })[0].email },
      { webhook: true },
    );
    expect(out.outcome).toBe('found');
    expect(env.proxy.seen('POST /person/enrichment').filter((s) => s.at >= from)).toHaveLength(1);
    expect(env.proxy.seen('GET /person/enrichment').filter((s) => s.at >= from)).toHaveLength(0);
  } finally {
    await client.close();
    await connection.close();
    child.kill('SIGTERM');
    if (child.exitCode === null) await once(child, 'exit');
  }
});

it('refuses to start behind a public URL the service would refuse, saying why', async () => {
  const child = spawn(process.execPath, [WORKER_SCRIPT], {
    cwd: projectRoot(),
    env: workerEnv(uniqueTaskQueue('worker-webhooks'), {
      PCDS_WEBHOOK_PUBLIC_URL: 'http://127.0.0.1:8788',
    }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const [code] = (await once(child, 'exit')) as [number];
  expect(code).toBe(1);
  expect(log).toContain('PCDS_WEBHOOK_PUBLIC_URL');
  expect(log).toContain('loopback');
  expect(log).toContain('PCDS_WEBHOOK_ALLOW_LOOPBACK=true');
  expect(log).not.toContain('worker-receiver-test-secret');
});
