// What an operator sees in the Web UI's list view and details, read the way the UI reads them
// (visibility queries on the search attributes, the workflow metadata query for the details),
// against the real dev server and the emulator over HTTP:
// - calls waiting for permits show PcdsState="throttled" and why, then end in their outcome;
// - a failed call shows PcdsState="failed" and its code;
// - a key throttle's details are what `pcds throttle status` prints (the compiled command:
//   `npm run build` first);
// - workflows start under the new type names, and the 0.1.x names still run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import type { PcdsClient } from '../../src/client.js';
import { createActivities } from '../../src/activities/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { loadConfig } from '../../src/config.js';
import { unthrottled } from '../../src/throttle/permits.js';
import { createServiceClients } from '../../src/http/service-clients.js';
import { readEachThrottleStatus } from '../../src/client/throttle-operator.js';
import { throttleWorkflowId } from '../../src/throttle/protocol.js';
import { formatThrottleStatus } from '../../src/throttle/status-text.js';
import type { EndpointCallInput } from '../../src/workflows/endpoint-call.js';
import { runCli } from '../cli/cli-env.js';
import {
  connectClient,
  temporalAddress,
  testEncryptionEnv,
  testNamespace,
  uniqueTaskQueue,
  withWorker,
} from '../harness/temporal.js';
import {
  emails,
  pcdsClient,
  startLimitedEmulator,
  throttledConfig,
  withThrottledWorker,
} from './env.js';

/** 20 times faster, a "minute" of 3 s: a permit wait over 250 ms (5 s scaled) shows as throttled. */
const SCALE = 20;
const LIMITS = { perMinute: 4, perHour: 400 };
const CALLS = 10;
const BROKE = { id: 'broke', key: 'pcds_view_broke', secret: 'pcds_view_broke_secret' };

let emulator: RunningEmulator;
let brokeEmulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startLimitedEmulator(LIMITS, SCALE);
  brokeEmulator = await startEmulator({
    port: 0,
    timeScale: SCALE,
    limits: { enabled: false },
    keys: [{ ...BROKE, credits: 0 }],
  });
});
afterAll(async () => {
  await emulator?.stop();
  await brokeEmulator?.stop();
});

/** The Web UI's "current details" of a workflow: its metadata query, as the UI asks it. */
async function currentDetails(client: Client, workflowId: string): Promise<string> {
  const meta = await client.workflow
    .getHandle(workflowId)
    .query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  return meta.currentDetails ?? '';
}

/** The PcdsState values a workflow's history set, in order. */
async function stateChanges(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const field =
      e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.PcdsState;
    return field?.data ? [JSON.parse(Buffer.from(field.data).toString('utf8')) as string] : [];
  });
}

/** Workflow ids a list-view query finds. */
async function listIds(client: Client, query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of client.workflow.list({ query })) ids.push(wf.workflowId);
  return ids;
}

/** A worker on the shared throttle of a fresh key, and a client of it, for `fn`. */
async function onThrottledKey(
  name: string,
  fn: (ctx: { temporal: Client; client: PcdsClient; keyId: string }) => Promise<void>,
): Promise<void> {
  const taskQueue = uniqueTaskQueue(name);
  const keyId = `key-${taskQueue}`;
  const config = throttledConfig(emulator, LIMITS, keyId, SCALE);
  await withThrottledWorker(config, taskQueue, async (temporal) => {
    const { client, close } = await pcdsClient(taskQueue, {
      pollIntervalMs: 100,
      maxWaitMs: 120_000,
    });
    try {
      await fn({ temporal, client, keyId });
    } finally {
      await close();
    }
  });
}

describe('operators see why work waits', () => {
  it('calls held back by the throttle show throttled and why, then end found; the throttle details match the CLI', async () => {
    await onThrottledKey('operator-view', async ({ temporal, client, keyId }) => {
      const handles = await Promise.all(
        emails(CALLS).map((email) => client.startCall('person_enrichment', { email }, { keyId })),
      );
      const ours = `PcdsKeyId="${keyId}" AND WorkflowType="pcdsEndpointCall"`;
      // What the list view filtered on PcdsState="throttled" shows, while calls wait; and
      // the details of one of them name the window that holds it.
      let seen: { id: string; details: string } | undefined;
      await expect
        .poll(
          async () => {
            for (const id of await listIds(temporal, `${ours} AND PcdsState="throttled"`)) {
              const details = await currentDetails(temporal, id);
              if (details.includes('waits for a permit')) {
                seen = { id, details };
                return true;
              }
            }
            return false;
          },
          { timeout: 30_000, interval: 100 },
        )
        .toBe(true);
      expect(seen!.details).toMatch(
        new RegExp(
          `^person_enrichment: throttled: (submit|poll) waits for a permit on key ${keyId}: ` +
            `the key's (minute window is full|hour window is full)|the key is closed after a 429`,
        ),
      );

      const outcomes = await Promise.all(handles.map((h) => h.result()));
      expect(outcomes.map((o) => o.outcome)).toEqual(Array(CALLS).fill('found'));
      // Every call left throttled for its outcome: the list view finds them all done.
      await expect
        .poll(() => listIds(temporal, `${ours} AND PcdsState="done" AND PcdsOutcome="found"`), {
          timeout: 15_000,
        })
        .toHaveLength(CALLS);
      expect(await listIds(temporal, `${ours} AND PcdsState="throttled"`)).toEqual([]);
      expect(await currentDetails(temporal, seen!.id)).toMatch(/^person_enrichment: done/);
      // Entering throttled is rationed: once per stretch of waiting, and a stretch is one request
      // (the submit or a poll) waiting for its permit, so never more often than the call sent
      // requests. How many of its requests wait depends on the machine's timing.
      const changes = await Promise.all(handles.map((h) => stateChanges(temporal, h.workflowId)));
      const polls = await Promise.all(handles.map(async (h) => (await h.state()).polls));
      for (const [i, c] of changes.entries()) {
        expect(c.at(-1)).toBe('done');
        expect(c.filter((s) => s === 'throttled').length).toBeLessThanOrEqual(1 + polls[i]);
        // Never the same state twice in a row: each upsert is a change an operator sees.
        expect(c.some((s, i) => i > 0 && s === c[i - 1])).toBe(false);
      }
      expect(changes.filter((c) => c.includes('throttled')).length).toBeGreaterThan(0);

      // The key's throttle runs under its new type name, and once nothing moves any more
      // (the minute window emptied, nobody waiting), its details are what the CLI prints.
      expect(
        await listIds(
          temporal,
          `WorkflowId="${throttleWorkflowId(keyId)}" AND WorkflowType="pcdsKeyThrottle"`,
        ),
      ).toHaveLength(1);
      await expect
        .poll(
          async () => {
            const [reading] = await readEachThrottleStatus(temporal, [keyId]);
            const cli = formatThrottleStatus(reading.status!);
            const details = await currentDetails(temporal, throttleWorkflowId(keyId));
            return details === ['```', cli, '```'].join('\n') && cli.includes('minute  0/');
          },
          { timeout: 20_000, interval: 250 },
        )
        .toBe(true);
      // `pcds throttle status` without a key lists it (running throttles of either type name).
      await expect
        .poll(async () => (await readEachThrottleStatus(temporal)).map((r) => r.keyId), {
          timeout: 15_000,
        })
        .toContain(keyId);
      // The same, word for word, as the `pcds` command prints it (run `npm run build` first).
      const cli = await runCli(['throttle', 'status', '--key', keyId], {
        PCDS_TEMPORAL_ADDRESS: temporalAddress(),
        PCDS_TEMPORAL_NAMESPACE: testNamespace(),
        ...testEncryptionEnv(),
      });
      expect(cli.code, cli.stderr).toBe(0);
      expect(await currentDetails(temporal, throttleWorkflowId(keyId))).toBe(
        ['```', cli.stdout.trimEnd(), '```'].join('\n'),
      );
    });
  }, 150_000);

  it('a person search held back by the throttle shows throttled and why, then ends found', async () => {
    await onThrottledKey('operator-search', async ({ temporal, client, keyId }) => {
      // Five pages of a POST and a GET each: more than the key's minute window holds.
      const search = client.searchPeople(
        { query: 'engineer' },
        { maxResults: 15, pageSize: 3, keyId },
      );
      const ours = `PcdsKeyId="${keyId}" AND WorkflowType="pcdsPersonSearch"`;
      let details = '';
      await expect
        .poll(
          async () => {
            const [id] = await listIds(temporal, `${ours} AND PcdsState="throttled"`);
            details = id ? await currentDetails(temporal, id) : '';
            return details.includes('waits for a permit');
          },
          { timeout: 30_000, interval: 100 },
        )
        .toBe(true);
      expect(details).toMatch(
        new RegExp(`^person_search: throttled: (submit|page) waits for a permit on key ${keyId}: `),
      );
      const result = await search;
      expect(result.returned).toBe(15);
      await expect
        .poll(() => listIds(temporal, `${ours} AND PcdsState="done" AND PcdsOutcome="found"`), {
          timeout: 15_000,
        })
        .toHaveLength(1);
    });
  }, 120_000);

  it('a failed call shows failed with its code, under the new type name and under the 0.1.x one', async () => {
    const taskQueue = uniqueTaskQueue('operator-failed');
    const config = loadConfig({
      PCDS_BASE_URL: brokeEmulator.url,
      PCDS_API_KEYS: JSON.stringify([BROKE]),
      PCDS_THROTTLE: 'off',
      ...testEncryptionEnv(),
    });
    const clients = createServiceClients(config);
    const { client: temporal, connection } = await connectClient();
    try {
      const activities = createActivities({ config, clients, permits: unthrottled });
      await withWorker({ taskQueue, activities }, async () => {
        const input: EndpointCallInput = {
          endpoint: 'person_enrichment',
          params: { email: emails(1)[0] },
          keyId: BROKE.id,
          pollIntervalMs: 100,
        };
        const ids = ['pcdsEndpointCall', 'endpointCall'].map((type) => ({
          type,
          id: `${taskQueue}-${type}`,
        }));
        for (const { type, id } of ids) {
          const handle = await temporal.workflow.start(type, {
            taskQueue,
            workflowId: id,
            args: [input],
          });
          await expect(handle.result()).rejects.toMatchObject({
            cause: { type: 'insufficient_credits' },
          });
        }
        for (const { type, id } of ids) {
          await expect
            .poll(
              () =>
                listIds(
                  temporal,
                  `WorkflowId="${id}" AND WorkflowType="${type}" AND PcdsState="failed" AND PcdsOutcome="failed"`,
                ),
              { timeout: 15_000 },
            )
            .toEqual([id]);
          expect(await currentDetails(temporal, id)).toBe(
            'person_enrichment: failed: insufficient_credits',
          );
        }
      });
    } finally {
      await clients.close();
      await connection.close();
    }
  }, 90_000);
});
