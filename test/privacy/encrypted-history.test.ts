// Person data never reaches Temporal in clear: a batch, a call answered by webhook, a person
// search and the key's throttle run through production's wiring (createWorker, the configured
// webhook receiver, the typed client), then every history of the task queue is read raw, without
// the codec. With a key, none of the input emails, phones and names nor any profile value is in
// it; with PCDS_ENCRYPTION=off the same run shows them, so the check can fail.
import { lazyBatchStore, openStoreFromSettings } from '../../src/store/index.js';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPcdsClient } from '../../src/client.js';
import { loadConfig } from '../../src/config.js';
import { sampleRows, startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { dataConverterFromSettings, temporalClient } from '../../src/temporal/data-converter.js';
import { startReceiverFromConfig } from '../../src/webhooks/from-config.js';
import { createWorker } from '../../src/worker.js';
import {
  connectClient,
  DEFAULT_WORKFLOWS_PATH,
  installQuietRuntime,
  temporalAddress,
  testEncryptionEnv,
  testNamespace,
  uniqueTaskQueue,
  workflowBundle,
} from '../harness/temporal.js';
import { historyToJSON, readableText } from '../replay/history-json.js';

interface Run {
  /** Values that must not be readable: inputs (emails, phones, names) and profile values. */
  personal: string[];
  /** Every history of the run's task queue, as proto JSON (payload data in base64). */
  histories: Map<string, string>;
  workflowTypes: Set<string>;
}

let emulator: RunningEmulator;
const dir = mkdtempSync(join(tmpdir(), 'pcds-privacy-'));

beforeAll(async () => {
  installQuietRuntime();
  emulator = await startEmulator({
    port: 0,
    latency: { queuedMs: 20, processingMs: 60 },
    allowLoopbackCallbacks: true,
  });
});

afterAll(async () => {
  await emulator?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Strings of a value, deeply: the profile fields a result carries. */
function leafStrings(value: unknown, into: string[] = []): string[] {
  if (typeof value === 'string') into.push(value);
  else if (Array.isArray(value)) value.forEach((v) => leafStrings(v, into));
  else if (value && typeof value === 'object')
    Object.values(value).forEach((v) => leafStrings(v, into));
  return into;
}

async function runScenario(encryption: Record<string, string>, label: string): Promise<Run> {
  const taskQueue = uniqueTaskQueue(`privacy-${label}`);
  const keyId = `privacy-${label}-${randomBytes(3).toString('hex')}`;
  const env = {
    PCDS_BASE_URL: emulator.url,
    PCDS_API_KEYS: JSON.stringify([{ ...emulator.devKey, id: keyId }]),
    PCDS_TEMPORAL_ADDRESS: temporalAddress(),
    PCDS_TEMPORAL_NAMESPACE: testNamespace(),
    PCDS_TASK_QUEUE: taskQueue,
    PCDS_THROTTLE: 'on',
    PCDS_POLL_INTERVAL_MS: '100',
    PCDS_WEBHOOK_SECRET: randomBytes(24).toString('base64url'),
    PCDS_WEBHOOK_PUBLIC_URL: 'http://127.0.0.1',
    PCDS_WEBHOOK_ALLOW_LOOPBACK: 'true',
    PCDS_WEBHOOK_HOST: '127.0.0.1',
    PCDS_WEBHOOK_PORT: '0',
    ...encryption,
  };
  const receiverConfig = loadConfig(env);
  const { connection } = await connectClient();
  const receiver = await startReceiverFromConfig({
    config: receiverConfig,
    client: temporalClient(connection, receiverConfig),
    log: { info: () => undefined, warn: () => undefined },
  });
  const config = loadConfig({ ...env, PCDS_WEBHOOK_PUBLIC_URL: receiver.url });
  const worker = await createWorker({
    config,
    workerOptions: {
      workflowBundle: await workflowBundle(DEFAULT_WORKFLOWS_PATH),
      debugMode: true,
      shutdownGraceTime: '1s',
    },
  });
  const running = worker.run();
  const pcds = await createPcdsClient({
    connection,
    namespace: config.PCDS_TEMPORAL_NAMESPACE,
    taskQueue,
    dataConverter: dataConverterFromSettings(config),
    // The worker's store settings, encryption included: the rows it loads are sealed (or not)
    // as the worker reads them.
    store: lazyBatchStore(() => openStoreFromSettings(config)),
    // Every row and call is sent (a result from the cache would skip the webhook's delivery).
    defaults: {
      pollIntervalMs: 100,
      maxWaitMs: 60_000,
      webhookFallbackPollMs: 60_000,
      cache: false,
    },
  });
  const personal: string[] = [];
  try {
    const rows = sampleRows({ rows: 4 });
    const [byWebhook, ...batchRows] = rows;
    for (const r of rows) personal.push(r.email, r.name ?? '', r.phone ?? '');
    const input = join(dir, `${label}.csv`);
    const output = join(dir, `${label}.jsonl`);
    writeFileSync(
      input,
      [
        'email,name,phone',
        ...batchRows.map((r) => `${r.email},${r.name ?? ''},${r.phone ?? ''}`),
      ].join('\n') + '\n',
    );
    const batch = await pcds.startBatch({ input, output, window: 3 });
    await batch.result();
    for (const line of readFileSync(output, 'utf8').trim().split('\n')) {
      const parsed = JSON.parse(line) as { outcome: string; result?: unknown };
      expect(parsed.outcome).toBe('found');
      personal.push(...leafStrings(parsed.result));
    }

    const delivered = await pcds.call(
      'person_enrichment',
      { email: byWebhook.email },
      { webhook: true },
    );
    expect(delivered.outcome).toBe('found');
    personal.push(...leafStrings('result' in delivered ? delivered.result : undefined));

    const search = await pcds.searchPeople({ query: 'engineer' }, { maxResults: 5 });
    personal.push(...leafStrings(search));
  } finally {
    await pcds.close();
    worker.shutdown();
    await running;
    await receiver.stop();
  }

  // Raw: a client without the codec, exactly what someone with access to the server reads.
  const { client: raw, connection: rawConnection } = await connectClient({ dataConverter: {} });
  const histories = new Map<string, string>();
  const workflowTypes = new Set<string>();
  try {
    for await (const wf of raw.workflow.list({ query: `TaskQueue = "${taskQueue}"` })) {
      const history: History = await raw.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
      histories.set(`${wf.workflowId}/${wf.runId}`, historyToJSON(history));
      workflowTypes.add(wf.type);
    }
  } finally {
    await rawConnection.close();
  }
  // Profile values worth looking for: long enough not to match by chance (a country, "true").
  const distinct = [...new Set(personal.filter((v) => v.length >= 8))];
  return { personal: distinct, histories, workflowTypes };
}

describe('workflow histories, read without the codec', () => {
  let encrypted: Run;
  let clear: Run;
  beforeAll(async () => {
    encrypted = await runScenario(testEncryptionEnv(), 'encrypted');
    // Payloads in clear; the store's lookups stay keyed (a store opens with no plain hash).
    clear = await runScenario(
      { PCDS_ENCRYPTION: 'off', PCDS_ID_SECRET: testEncryptionEnv().PCDS_ID_SECRET },
      'clear',
    );
  }, 120_000);

  it('covers a batch and its rows, a call by webhook, a person search and the throttle', () => {
    for (const run of [encrypted, clear]) {
      expect([...run.workflowTypes].sort()).toEqual([
        'pcdsBatch',
        'pcdsEndpointCall',
        'pcdsKeyThrottle',
        'pcdsPersonSearch',
      ]);
      expect(run.personal.length).toBeGreaterThan(20);
    }
  });

  it('hold no email, phone, name or profile value when a key is configured', () => {
    const found: string[] = [];
    for (const [id, json] of encrypted.histories) {
      const text = readableText(json);
      for (const value of encrypted.personal)
        if (text.includes(value)) found.push(`${id}: ${value}`);
    }
    expect(found).toEqual([]);
  });

  it('show them with PCDS_ENCRYPTION=off (so the check above can fail)', () => {
    const all = [...clear.histories.values()].map(readableText).join('\n');
    const shown = clear.personal.filter((value) => all.includes(value));
    // Every input email and name, and most profile values, are there to be read.
    expect(shown.length).toBeGreaterThan(clear.personal.length / 2);
    for (const email of sampleRows({ rows: 4 }).map((r) => r.email)) expect(all).toContain(email);
  });
});
