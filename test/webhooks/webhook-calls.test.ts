// Calls in webhook mode against the real dev server, the emulator delivering over real HTTP and
// the receiver: deliveries complete calls without polls, duplicates and forgeries change nothing,
// delivered failures are confirmed by one poll, and a lost delivery falls back to polling.
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PcdsCallError } from '../../src/client.js';
import { sampleRows } from '../../src/emulator/index.js';
import type { WebhookReceiver } from '../../src/webhooks/receiver.js';
import { callbackToken, callbackUrlFor } from '../../src/webhooks/token.js';
import type { WebhookDelivery } from '../../src/calls/signals.js';
import { decodedHistory } from '../harness/temporal.js';
import { startWebhookEnv, withWebhookWorker, type WebhookEnv } from './webhook-env.js';

let env: WebhookEnv;
const [first, second] = sampleRows({ rows: 2 });
const ENRICH = 'POST /person/enrichment';
const POLL = 'GET /person/enrichment';

beforeAll(async () => {
  // Jobs take 1.5 s (30 s at a time scale of 0.05): long enough to act while a call waits.
  // Every completed job is delivered twice, so every test also sees a repeated delivery.
  env = await startWebhookEnv({
    latency: { queuedMs: 0, processingMs: 30_000 },
    webhooks: { deliveries: 2 },
  });
});
afterAll(async () => {
  await env?.stop();
});

function requestsSince(route: string, from: number): number {
  return env.proxy.seen(route).filter((s) => s.at >= from).length;
}

/** The webhook deliveries signalled to a workflow, decoded from its history. */
async function signalledDeliveries(workflow: WorkflowHandle): Promise<WebhookDelivery[]> {
  const history = await decodedHistory(await workflow.fetchHistory());
  return (history.events ?? [])
    .map((e) => e.workflowExecutionSignaledEventAttributes)
    .filter((a) => a?.signalName === 'webhookDelivered')
    .map((a) => defaultPayloadConverter.fromPayload<WebhookDelivery>(a!.input!.payloads![0]));
}

/** Timers that fired in a call: a fallback poll waits on one, a delivery cancels it. */
async function timersFired(workflow: WorkflowHandle): Promise<number> {
  const history = await decodedHistory(await workflow.fetchHistory());
  return (history.events ?? []).filter((e) => e.timerFiredEventAttributes).length;
}

function urlOn(receiver: WebhookReceiver, workflowId: string): string {
  return callbackUrlFor(workflowId, { ...env.settings, publicUrl: receiver.url });
}

async function post(url: string, body: unknown): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}

async function waitingForWebhook(handle: {
  state(): Promise<{ phase: string; requestId?: string }>;
}): Promise<string> {
  await expect
    .poll(async () => (await handle.state()).phase, { timeout: 10_000, interval: 50 })
    .toBe('waiting_for_webhook');
  return (await handle.state()).requestId!;
}

describe('calls in webhook mode', () => {
  it('completes by delivery with no poll after the submit, with the result polling gives', async () => {
    await withWebhookWorker(env, { fallbackPollMs: 20_000 }, async ({ client, receiver }) => {
      const from = Date.now();
      const handle = await client.startCall(
        'person_enrichment',
        { email: first.email },
        { webhook: true },
      );
      const out = await handle.result();
      expect(out.outcome).toBe('found');
      expect(requestsSince(ENRICH, from)).toBe(1);
      expect(requestsSince(POLL, from)).toBe(0);
      expect(await timersFired(handle.workflow)).toBe(0);

      // The same input by polling: the same result.
      const polled = await client.call('person_enrichment', { email: first.email });
      expect(polled).toMatchObject({ outcome: 'found' });
      if (out.outcome === 'found' && polled.outcome === 'found')
        expect(out.result).toEqual(polled.result);

      // The repeated delivery was acknowledged and changed nothing: one completion, and the
      // workflow took at most both deliveries as signals (the second finds it done).
      await env.emulator.drainWebhooks();
      const s = receiver.stats();
      expect(s.signalled + s.duplicates + s.noWorkflow).toBe(2);
      expect(s.refused + s.malformed + s.failed).toBe(0);
      const signals = await signalledDeliveries(handle.workflow);
      expect(signals.length).toBeGreaterThanOrEqual(1);
      expect(signals.every((d) => d.requestId === out.requestId)).toBe(true);

      // The callback token never entered the call's history.
      // Payload data is base64 in the history's JSON form: decode it, so a token there would show.
      const history = JSON.stringify(
        await decodedHistory(await handle.workflow.fetchHistory()),
        (k, v: unknown) =>
          k === 'data' && typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : v,
      );
      expect(history).toContain(out.requestId);
      expect(history).not.toContain(callbackToken(env.settings.current, handle.workflowId));

      // Re-posting the delivery after completion: acknowledged, nothing changes.
      expect(await post(urlOn(receiver, handle.workflowId), signals[0].body)).toBe(200);
      expect(await handle.result()).toEqual(out);
      expect((await handle.workflow.describe()).status.name).toBe('COMPLETED');
    });
  });

  it('refuses forged deliveries, which signal nothing; the call ends with the real result', async () => {
    await withWebhookWorker(env, { fallbackPollMs: 20_000 }, async ({ client, receiver }) => {
      const from = Date.now();
      const handle = await client.startCall(
        'person_enrichment',
        { email: second.email },
        { webhook: true },
      );
      const requestId = await waitingForWebhook(handle);
      const forgedBody = {
        success: true,
        data: {
          request_id: requestId,
          status: 'completed',
          completed: true,
          result: { displayname: 'Forged Name' },
          error: null,
        },
        timestamp: '2026-11-21T10:00:00',
      };
      const real = urlOn(receiver, handle.workflowId);
      const token = real.split('/').at(-1)!;
      const wrongToken =
        real.slice(0, -token.length) + (token[0] === 'A' ? 'B' : 'A') + token.slice(1);
      // Another workflow's valid token presented for this one.
      const otherToken = callbackToken(env.settings.current, `${handle.workflowId}-other`);
      const borrowed = real.slice(0, -token.length) + otherToken;
      const unknownKey = real.replace('/hooks/k1/', '/hooks/k7/');
      for (const url of [wrongToken, borrowed, unknownKey])
        expect(await post(url, forgedBody)).toBe(404);
      expect(receiver.stats().signalled).toBe(0);

      const out = await handle.result();
      expect(out.outcome).toBe('found');
      if (out.outcome === 'found')
        expect(out.result).not.toMatchObject({ displayname: 'Forged Name' });
      const signals = await signalledDeliveries(handle.workflow);
      expect(signals.length).toBeGreaterThanOrEqual(1);
      expect(JSON.stringify(signals)).not.toContain('Forged Name');
      expect(receiver.stats().refused).toBe(3);
      expect(requestsSince(POLL, from)).toBe(0);
    });
  });

  it('confirms a delivery that names no job with one poll, and keeps waiting while the job runs', async () => {
    await withWebhookWorker(env, { fallbackPollMs: 20_000 }, async ({ client, receiver }) => {
      const from = Date.now();
      const handle = await client.startCall(
        'person_enrichment',
        { email: first.email },
        { webhook: true },
      );
      await waitingForWebhook(handle);
      // A failure envelope at the call's own URL (it carries no data): not enough to fail the call.
      const stale = {
        success: false,
        error: { code: 'internal_error', message: 'stale' },
        timestamp: '2026-11-21T10:00:00',
      };
      expect(await post(urlOn(receiver, handle.workflowId), stale)).toBe(200);
      const out = await handle.result();
      expect(out.outcome).toBe('found');
      expect(requestsSince(POLL, from)).toBe(1);
      expect(await timersFired(handle.workflow)).toBe(0);
    });
  });

  it('fails with the job error a delivery reports, after one poll confirms it', async () => {
    env.emulator.setFaults({ jobSearchErrorShare: 1, paths: ['/person/enrichment'] });
    try {
      await withWebhookWorker(env, { fallbackPollMs: 20_000 }, async ({ client }) => {
        const from = Date.now();
        const handle = await client.startCall(
          'person_enrichment',
          { email: first.email },
          { webhook: true },
        );
        const err = await handle.result().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(PcdsCallError);
        expect((err as PcdsCallError).code).toBe('search_error');
        expect(requestsSince(POLL, from)).toBe(1);
        // The delivery, not the fallback timer, led to that poll.
        expect(await timersFired(handle.workflow)).toBe(0);
      });
    } finally {
      env.emulator.setFaults({});
    }
  });

  it('falls back to polling when the delivery is lost', async () => {
    env.emulator.setFaults({ webhookDropShare: 1 });
    try {
      await withWebhookWorker(env, { fallbackPollMs: 700 }, async ({ client, receiver }) => {
        const from = Date.now();
        const out = await client.call(
          'person_enrichment',
          { email: second.email },
          { webhook: true },
        );
        expect(out.outcome).toBe('found');
        expect(receiver.stats().signalled).toBe(0);
        // Slow fallback polls only: the job took 1.5 s, so a few at most.
        const polls = requestsSince(POLL, from);
        expect(polls).toBeGreaterThanOrEqual(1);
        expect(polls).toBeLessThanOrEqual(4);
      });
    } finally {
      env.emulator.setFaults({});
    }
  });

  it('person search: the delivery reports completion, the rows are read by one GET', async () => {
    await withWebhookWorker(env, { fallbackPollMs: 20_000 }, async ({ client }) => {
      const from = Date.now();
      const out = await client.call(
        'person_search',
        { query: 'engineer', limit: 5 },
        { webhook: true },
      );
      expect(out.outcome).toBe('found');
      if (out.outcome === 'found')
        expect(Array.isArray(out.result) && out.result.length).toBeTruthy();
      expect(env.proxy.seen('GET /person/search').filter((s) => s.at >= from)).toHaveLength(1);
    });
  });
});
