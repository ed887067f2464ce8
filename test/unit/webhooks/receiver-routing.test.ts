// Where the receiver sends a delivery, without a Temporal server: a compact row's (its id has a
// row's shape and the store's journal has the row) is kept in the store, checked against the
// row's accepted job and the per-call bound; any other goes to its workflow as a signal. The
// receiver needs two roles of the store alone (a row's journal entry, its deliveries): it runs
// over the real store and over an in-memory one of those roles alike.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { afterEach, describe, expect, it } from 'vitest';
import type { JournalEntry } from '../../../src/batch/journal.js';
import { rowWorkflowId } from '../../../src/contract/workflow-ids.js';
import {
  BatchStore,
  type DeliveryInbox,
  type DeliveryRecording,
  type StoredDelivery,
  type SubmitJournalReader,
} from '../../../src/store/index.js';
import type { RowDeliveryStore } from '../../../src/webhooks/delivery-routing.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../../src/webhooks/receiver.js';
import type { WebhookSettings } from '../../../src/webhooks/settings.js';
import { callbackUrlFor } from '../../../src/webhooks/token.js';
import { tempStore } from '../store/temp-store.js';

const settings: WebhookSettings = {
  publicUrl: 'https://hooks.acme-data.io',
  current: { id: 'k1', secret: 'routing-test-secret-0123456789' },
  previous: [],
  allowLoopback: false,
  fallbackPollMs: 60_000,
};

const envelope = (requestId: string) => ({
  success: true,
  data: {
    request_id: requestId,
    status: 'completed',
    result: { displayname: 'Jane Roe' },
    error: null,
  },
  timestamp: '2026-11-21T10:00:00',
});

/** A Temporal client that knows only `running` workflows and records the signals they get. */
function fakeClient(running: Set<string>) {
  const signals: { workflowId: string; requestId?: string }[] = [];
  const handle = (workflowId: string) => ({
    query: () => {
      if (!running.has(workflowId)) throw new WorkflowNotFoundError('not found', workflowId, '');
      return Promise.resolve({ requestId: undefined });
    },
    signal: (_def: unknown, delivery: { requestId?: string }) => {
      if (!running.has(workflowId)) throw new WorkflowNotFoundError('not found', workflowId, '');
      signals.push({
        workflowId,
        ...(delivery.requestId ? { requestId: delivery.requestId } : {}),
      });
      return Promise.resolve();
    },
  });
  const client = {
    withDeadline: <T>(_at: number, fn: () => Promise<T>) => fn(),
    workflow: { getHandle: handle },
  } as unknown as Client;
  return { client, signals };
}

const receivers: WebhookReceiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.stop()));
});

async function testStore(): Promise<BatchStore> {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-routing-'));
  const store = await tempStore(dir);
  const batches = new BatchStore(store);
  await batches.beginLoad('b-1', 'person_enrichment', ['email']);
  await batches.addRows(
    'b-1',
    'person_enrichment',
    [1, 2, 3].map((row) => ({ row, params: { email: `p${row}@example.org` }, key: { row } })),
  );
  await batches.finishLoad('b-1', { blankLines: 0, dedupe: false });
  return batches;
}

async function deliver(receiver: WebhookReceiver, workflowId: string, body: unknown) {
  const url = callbackUrlFor(workflowId, settings);
  const res = await fetch(receiver.url + new URL(url).pathname, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function receiverWith(client: Client, store?: { get(): Promise<RowDeliveryStore> }) {
  const receiver = await startWebhookReceiver({
    settings,
    client,
    port: 0,
    host: '127.0.0.1',
    log: { info: () => undefined, warn: () => undefined },
    ...(store ? { store } : {}),
  });
  receivers.push(receiver);
  return receiver;
}

describe('receiver routing', () => {
  it("keeps a compact row's delivery in the store, once, and only its accepted job's", async () => {
    const store = await testStore();
    const { client, signals } = fakeClient(new Set());
    const receiver = await receiverWith(client, { get: () => Promise.resolve(store) });
    // Row 1 is being sent (its job not known yet); row 2's job is accepted.
    await store.claimRow('b-1', 1, 'attempt-1');
    await store.claimRow('b-1', 2, 'attempt-1');
    await store.recordRow('b-1', {
      row: 2,
      state: 'accepted',
      owner: 'attempt-1',
      requestId: 'req_2',
    });

    const row1 = rowWorkflowId('b-1', 1);
    expect(await deliver(receiver, row1, envelope('req_1'))).toEqual({
      status: 200,
      body: { received: true },
    });
    expect((await deliver(receiver, row1, envelope('req_1'))).body).toEqual({
      received: true,
      duplicate: true,
    });
    const row2 = rowWorkflowId('b-1', 2);
    // Another job than the row's accepted one: acknowledged, not kept.
    expect((await deliver(receiver, row2, envelope('req_9'))).status).toBe(200);
    expect((await deliver(receiver, row2, envelope('req_2'))).status).toBe(200);

    expect(await store.deliveries('b-1', 1, 'req_1')).toMatchObject([
      { requestId: 'req_1', body: envelope('req_1') },
    ]);
    expect(await store.deliveries('b-1', 2, 'req_9')).toEqual([]);
    expect(await store.deliveries('b-1', 2, 'req_2')).toHaveLength(1);
    expect(signals).toEqual([]);
    expect(receiver.stats()).toMatchObject({ stored: 2, duplicates: 1, foreign: 1, signalled: 0 });
  });

  it('acknowledges a delivery for a compact row that has its result, keeping nothing', async () => {
    const store = await testStore();
    const receiver = await receiverWith(fakeClient(new Set()).client, {
      get: () => Promise.resolve(store),
    });
    await store.claimRow('b-1', 3, 'attempt-1');
    await store.writeResults('b-1', [{ row: 3, key: { row: 3 }, outcome: 'empty' }]);
    expect((await deliver(receiver, rowWorkflowId('b-1', 3), envelope('req_3'))).status).toBe(200);
    expect(await store.deliveries('b-1', 3, 'req_3')).toEqual([]);
    expect(receiver.stats()).toMatchObject({ stored: 0, noWorkflow: 1 });
  });

  it("signals a row's workflow (no journal entry) and any other call", async () => {
    const store = await testStore();
    const rowWorkflow = rowWorkflowId('b-1', 2);
    const { client, signals } = fakeClient(new Set([rowWorkflow, 'call-1']));
    const receiver = await receiverWith(client, { get: () => Promise.resolve(store) });
    expect((await deliver(receiver, rowWorkflow, envelope('req_2'))).status).toBe(200);
    expect((await deliver(receiver, 'call-1', envelope('req_c'))).status).toBe(200);
    expect(signals).toEqual([
      { workflowId: rowWorkflow, requestId: 'req_2' },
      { workflowId: 'call-1', requestId: 'req_c' },
    ]);
    expect(await store.deliveries('b-1', 2, 'req_2')).toEqual([]);
    expect(receiver.stats()).toMatchObject({ signalled: 2, stored: 0 });
  });

  it("answers 503 for a row's id when the store is away and no workflow has the id", async () => {
    const rowWorkflow = rowWorkflowId('b-1', 2);
    const { client, signals } = fakeClient(new Set([rowWorkflow]));
    const receiver = await receiverWith(client, {
      get: () => Promise.reject(new Error('connection refused')),
    });
    // Maybe a compact row: the service is asked to try again.
    const away = await deliver(receiver, rowWorkflowId('b-1', 1), envelope('req_1'));
    expect(away.status).toBe(503);
    // A row's workflow is signalled all the same.
    expect((await deliver(receiver, rowWorkflow, envelope('req_2'))).status).toBe(200);
    expect(signals).toHaveLength(1);
    expect(receiver.stats()).toMatchObject({ failed: 1, signalled: 1 });
  });
});

/**
 * The receiver's roles of the store in memory: rows' journal entries, and each row's deliveries,
 * kept once per job, at most `bound`, never once the row has its result.
 */
class MemoryRowDeliveries implements SubmitJournalReader, DeliveryInbox {
  readonly entries = new Map<string, JournalEntry>();
  readonly ended = new Set<string>();
  private readonly kept = new Map<string, StoredDelivery[]>();

  constructor(private readonly bound: number) {}

  static at(batchId: string, row: number): string {
    return `${batchId}/${row}`;
  }

  rowEntry(batchId: string, row: number): Promise<JournalEntry | undefined> {
    return Promise.resolve(this.entries.get(MemoryRowDeliveries.at(batchId, row)));
  }

  recordDelivery(
    batchId: string,
    row: number,
    requestId: string | undefined,
    body: unknown,
  ): Promise<DeliveryRecording> {
    const at = MemoryRowDeliveries.at(batchId, row);
    const kept = this.kept.get(at) ?? [];
    const recording: DeliveryRecording = this.ended.has(at)
      ? 'finished'
      : kept.some((k) => k.requestId === requestId)
        ? 'duplicate'
        : kept.length >= this.bound
          ? 'over_bound'
          : 'recorded';
    if (recording === 'recorded') {
      kept.push({ ...(requestId ? { requestId } : {}), body, receivedAt: Date.now() });
      this.kept.set(at, kept);
    }
    return Promise.resolve(recording);
  }

  deliveries(batchId: string, row: number, requestId: string): Promise<StoredDelivery[]> {
    const kept = this.kept.get(MemoryRowDeliveries.at(batchId, row)) ?? [];
    return Promise.resolve(
      kept.filter((k) => k.requestId === undefined || k.requestId === requestId),
    );
  }
}

describe('receiver routing over an in-memory store of its two roles', () => {
  const journal = (memory: MemoryRowDeliveries, row: number, requestId?: string) =>
    memory.entries.set(MemoryRowDeliveries.at('b-1', row), {
      row,
      state: requestId ? 'accepted' : 'sending',
      owner: 'attempt-1',
      ...(requestId ? { requestId } : {}),
    });

  it("keeps a compact row's delivery where the row reads it, and routes the rest", async () => {
    const memory = new MemoryRowDeliveries(1);
    journal(memory, 1, 'req_1');
    journal(memory, 2);
    journal(memory, 3, 'req_3');
    memory.ended.add(MemoryRowDeliveries.at('b-1', 3));
    // Row 4 has no journal entry: a row that runs as a workflow.
    const rowWorkflow = rowWorkflowId('b-1', 4);
    const { client, signals } = fakeClient(new Set([rowWorkflow]));
    const receiver = await receiverWith(client, { get: () => Promise.resolve(memory) });

    const row1 = rowWorkflowId('b-1', 1);
    // Another job than the row's accepted one: acknowledged, never offered to the store.
    expect((await deliver(receiver, row1, envelope('req_9'))).status).toBe(200);
    expect(await deliver(receiver, row1, envelope('req_1'))).toEqual({
      status: 200,
      body: { received: true },
    });
    // Row 2's job is not known yet: its first delivery is kept, a second is over the row's bound.
    const row2 = rowWorkflowId('b-1', 2);
    expect((await deliver(receiver, row2, envelope('req_2'))).status).toBe(200);
    expect((await deliver(receiver, row2, envelope('req_2b'))).status).toBe(200);
    // Row 3 has its result: acknowledged, nothing kept.
    expect((await deliver(receiver, rowWorkflowId('b-1', 3), envelope('req_3'))).status).toBe(200);
    expect((await deliver(receiver, rowWorkflow, envelope('req_4'))).status).toBe(200);

    expect(await memory.deliveries('b-1', 1, 'req_1')).toEqual([
      { requestId: 'req_1', body: envelope('req_1'), receivedAt: expect.any(Number) as number },
    ]);
    expect(await memory.deliveries('b-1', 1, 'req_9')).toEqual([]);
    expect(await memory.deliveries('b-1', 2, 'req_2b')).toEqual([]);
    expect(await memory.deliveries('b-1', 3, 'req_3')).toEqual([]);
    expect(signals).toEqual([{ workflowId: rowWorkflow, requestId: 'req_4' }]);
    expect(receiver.stats()).toMatchObject({
      stored: 2,
      foreign: 1,
      overBound: 1,
      noWorkflow: 1,
      signalled: 1,
      failed: 0,
    });
  });

  it("answers 503 when the store does not take a compact row's delivery", async () => {
    const memory = new MemoryRowDeliveries(4);
    journal(memory, 1, 'req_1');
    memory.recordDelivery = () => Promise.reject(new Error('disk full'));
    const receiver = await receiverWith(fakeClient(new Set()).client, {
      get: () => Promise.resolve(memory),
    });
    expect((await deliver(receiver, rowWorkflowId('b-1', 1), envelope('req_1'))).status).toBe(503);
    expect(receiver.stats()).toMatchObject({ failed: 1, stored: 0 });
  });
});
