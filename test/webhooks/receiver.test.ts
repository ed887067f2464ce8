// The receiver against a real Temporal server: only deliveries at a URL it issued reach a
// workflow, each at most once, and malformed or forged ones leave no trace but a refusal.
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import {
  startWebhookReceiver,
  type DeliveryOutcome,
  type ReceiverLog,
  type WebhookReceiver,
} from '../../src/webhooks/receiver.js';
import type { WebhookSettings } from '../../src/webhooks/settings.js';
import { callbackUrlFor } from '../../src/webhooks/token.js';
import { withWorker } from '../harness/temporal.js';
import { finishSignal, recordDeliveries } from './fixtures/workflows.js';

const workflowsPath = resolve(fileURLToPath(import.meta.url), '../fixtures/workflows.ts');

const PUBLIC_URL = 'https://hooks.acme-data.io/pcds';
const settings: WebhookSettings = {
  publicUrl: PUBLIC_URL,
  current: { id: 'k2', secret: 'receiver-test-secret-current' },
  previous: [{ id: 'k1', secret: 'receiver-test-secret-previous' }],
  allowLoopback: false,
  fallbackPollMs: 60_000,
};

const REQUEST_ID = '9f86d081884c7d659a2feaa0c55ad015_1764000000_1';
const PII_EMAIL = 'jane.roe@example.org';

function completedEnvelope(requestId = REQUEST_ID): Record<string, unknown> {
  return {
    success: true,
    data: {
      request_id: requestId,
      status: 'completed',
      completed: true,
      result: { displayname: 'Jane Roe', best_business_email: PII_EMAIL },
      error: null,
    },
    timestamp: '2026-11-21T10:00:00',
  };
}

/** The receiver's local path for a public callback URL (the proxy keeps the prefix). */
function localUrl(receiver: WebhookReceiver, callbackUrl: string): string {
  return receiver.url + new URL(callbackUrl).pathname;
}

async function post(
  url: string,
  body: unknown,
  raw = false,
): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: raw ? (body as string) : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

async function signalCount(client: Client, workflowId: string): Promise<number> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter(
    (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'webhookDelivered',
  ).length;
}

/**
 * Sends `head` and then `bodyPart` on a raw connection and waits (at most `waitMs`) for the
 * receiver to answer or close: what it said and how long it took (Infinity: it did neither).
 */
function rawExchange(
  receiver: WebhookReceiver,
  head: string,
  bodyPart = '',
  waitMs = 8_000,
): Promise<{ answer: string; ms: number }> {
  const { hostname, port } = new URL(receiver.url);
  return new Promise((done) => {
    const started = Date.now();
    let answer = '';
    const socket = connect(Number(port), hostname, () => socket.write(head + bodyPart));
    const guard = setTimeout(() => {
      socket.destroy();
      done({ answer, ms: Infinity });
    }, waitMs);
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(guard);
      done({ answer, ms: Date.now() - started });
    });
    // An answer without a close (keep-alive) counts once it is complete enough to read.
    socket.on('data', () => {
      if (/^HTTP\/1\.1 \d{3}/.test(answer) && answer.includes('\r\n\r\n')) {
        clearTimeout(guard);
        socket.destroy();
        done({ answer, ms: Date.now() - started });
      }
    });
  });
}

const postHead = (path: string, contentLength: number) =>
  `POST ${path} HTTP/1.1\r\nHost: hooks\r\nContent-Type: application/json\r\n` +
  `Content-Length: ${contentLength}\r\n\r\n`;

function capturingLog(): ReceiverLog & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (fields, message) => lines.push(JSON.stringify({ ...fields, message })),
    warn: (fields, message) => lines.push(JSON.stringify({ ...fields, message })),
  };
}

describe('webhook receiver', () => {
  it('forwards a delivery once, refuses forged and malformed ones, acknowledges finished calls', async () => {
    await withWorker({ workflowsPath }, async ({ client, taskQueue }) => {
      const log = capturingLog();
      // What the receiver tells whoever started it (the worker's metrics), one outcome a delivery.
      const told: DeliveryOutcome[] = [];
      const receiver = await startWebhookReceiver({
        settings,
        client,
        port: 0,
        host: '127.0.0.1',
        log,
        onDelivery: (outcome) => told.push(outcome),
      });
      try {
        // A slash and more than 100 characters: ids like these must still route.
        const workflowId = `call/${taskQueue}/` + 'r'.repeat(120);
        const otherId = `call-other-${taskQueue}`;
        const handle = await client.workflow.start(recordDeliveries, { taskQueue, workflowId });
        const other = await client.workflow.start(recordDeliveries, {
          taskQueue,
          workflowId: otherId,
        });
        const url = callbackUrlFor(workflowId, settings);
        const otherUrl = callbackUrlFor(otherId, settings);

        // Forged: a wrong token, the token of another call, an unknown key id.
        const path = new URL(url).pathname.split('/');
        const token = path.at(-1)!;
        const wrongToken = localUrl(receiver, url).replace(
          token,
          (token[0] === 'A' ? 'B' : 'A') + token.slice(1),
        );
        const otherToken = localUrl(receiver, otherUrl).replace(/[^/]+$/, token);
        const unknownKey = localUrl(receiver, url).replace('/hooks/k2/', '/hooks/k9/');
        for (const forged of [wrongToken, otherToken, unknownKey]) {
          const res = await post(forged, completedEnvelope());
          expect(res.status).toBe(404);
          // Indistinguishable from a path that does not exist at all.
          expect(res.text).toBe((await post(`${receiver.url}/no/such/path`, {})).text);
        }

        // Malformed: not JSON, not an envelope, an envelope without a request_id. Nothing of the
        // body reaches the log.
        const malformed = [
          `{"email": "${PII_EMAIL}"`,
          JSON.stringify({ email: PII_EMAIL }),
          JSON.stringify({ success: true, data: { status: 'completed', email: PII_EMAIL } }),
        ];
        for (const body of malformed)
          expect((await post(localUrl(receiver, url), body, true)).status).toBe(400);

        // Valid, then the same delivery again.
        const first = await post(localUrl(receiver, url), completedEnvelope());
        expect(first.status).toBe(200);
        const again = await post(localUrl(receiver, url), completedEnvelope());
        expect(again.status).toBe(200);

        // A URL issued before a rotation (previous key id) is still honoured.
        const beforeRotation = callbackUrlFor(otherId, {
          ...settings,
          current: settings.previous[0],
        });
        expect((await post(localUrl(receiver, beforeRotation), completedEnvelope())).status).toBe(
          200,
        );

        await handle.signal(finishSignal);
        await other.signal(finishSignal);
        const delivered = await handle.result();
        expect(delivered).toEqual([{ requestId: REQUEST_ID, body: completedEnvelope() }]);
        expect(await signalCount(client, workflowId)).toBe(1);
        expect(await other.result()).toEqual([
          { requestId: REQUEST_ID, body: completedEnvelope() },
        ]);
        expect(await signalCount(client, otherId)).toBe(1);

        // The call is finished now: a late delivery (another request id, so not a remembered
        // duplicate) is acknowledged and changes nothing.
        const late = await post(
          localUrl(receiver, url),
          completedEnvelope(REQUEST_ID.replace(/_1$/, '_2')),
        );
        expect(late.status).toBe(200);
        // A valid URL for a call this server never ran: acknowledged too.
        const never = callbackUrlFor(`never-started-${taskQueue}`, settings);
        expect((await post(localUrl(receiver, never), completedEnvelope())).status).toBe(200);
        expect(await signalCount(client, workflowId)).toBe(1);

        expect(receiver.stats()).toEqual({
          signalled: 2,
          stored: 0,
          duplicates: 1,
          noWorkflow: 2,
          refused: 3,
          malformed: 3,
          foreign: 0,
          overBound: 0,
          failed: 0,
        });
        const toldCounts = Object.fromEntries(
          Object.keys(receiver.stats()).map((k) => [k, told.filter((o) => o === k).length]),
        );
        expect(toldCounts).toEqual(receiver.stats());
        const logged = log.lines.join('\n');
        expect(logged).not.toContain(PII_EMAIL);
        expect(logged).not.toContain(token);
        expect(
          log.lines.filter((l) => l.includes('malformed')).map((l) => JSON.parse(l).reason),
        ).toEqual(['not_json', 'not_an_envelope', 'no_request_id']);
      } finally {
        await receiver.stop();
      }
    });
  });

  it('answers on the bare path when a proxy strips the public prefix, and has a health check', async () => {
    await withWorker({ workflowsPath }, async ({ client, taskQueue }) => {
      const receiver = await startWebhookReceiver({
        settings,
        client,
        port: 0,
        host: '127.0.0.1',
        log: capturingLog(),
      });
      try {
        const workflowId = `call-bare-${taskQueue}`;
        const handle = await client.workflow.start(recordDeliveries, { taskQueue, workflowId });
        const bare =
          receiver.url +
          new URL(callbackUrlFor(workflowId, settings)).pathname.replace(/^\/pcds/, '');
        expect((await post(bare, completedEnvelope())).status).toBe(200);
        await handle.signal(finishSignal);
        expect(await handle.result()).toHaveLength(1);
        expect((await fetch(`${receiver.url}/healthz`)).status).toBe(200);
      } finally {
        await receiver.stop();
      }
    });
  });

  it('checks the token before reading a body: a forged URL is answered at once, an oversized body never read', async () => {
    await withWorker({ workflowsPath }, async ({ client, taskQueue }) => {
      const receiver = await startWebhookReceiver({
        settings,
        client,
        port: 0,
        host: '127.0.0.1',
        log: capturingLog(),
        bodyLimit: 256 * 1024,
      });
      try {
        const workflowId = `call-size-${taskQueue}`;
        const good = new URL(callbackUrlFor(workflowId, settings)).pathname;
        const forged = good.replace(/[^/]+$/, 'abc.AAAAAAAAAAAAAAAAAAAAAA');
        // Announces a body within the limit and sends none: the forged URL is refused without
        // waiting for it (a receiver that read first would sit waiting for the bytes).
        const refused = await rawExchange(receiver, postHead(forged, 200_000), '', 3_000);
        expect(refused.answer).toMatch(/^HTTP\/1\.1 404/);
        expect(refused.ms).toBeLessThan(1_500);
        // With the right URL, a body above the limit is refused from its announced length alone.
        const tooLarge = await rawExchange(receiver, postHead(good, 300_000), '', 3_000);
        expect(tooLarge.answer).toMatch(/^HTTP\/1\.1 413/);
        expect(tooLarge.ms).toBeLessThan(1_500);
        // A URL made long ago has expired: refused like a forged one.
        const expired = callbackUrlFor(workflowId, settings, Date.now() - 49 * 3_600_000);
        expect((await post(localUrl(receiver, expired), completedEnvelope())).status).toBe(404);
        expect(receiver.stats()).toMatchObject({ refused: 2, signalled: 0 });
      } finally {
        await receiver.stop();
      }
    });
  });

  it('cuts off a sender too slow with its headers or its body', async () => {
    await withWorker({ workflowsPath }, async ({ client, taskQueue }) => {
      const receiver = await startWebhookReceiver({
        settings,
        client,
        port: 0,
        host: '127.0.0.1',
        log: capturingLog(),
        timeouts: { headersMs: 1_000, requestMs: 2_000, idleMs: 2_000 },
      });
      try {
        const workflowId = `call-slow-${taskQueue}`;
        const handle = await client.workflow.start(recordDeliveries, { taskQueue, workflowId });
        const good = new URL(callbackUrlFor(workflowId, settings)).pathname;
        const body = JSON.stringify(completedEnvelope());
        // Half a body, then silence: the request deadline ends it.
        const slowBody = await rawExchange(
          receiver,
          postHead(good, body.length),
          body.slice(0, 40),
        );
        expect(slowBody.ms).toBeLessThan(5_000);
        expect(slowBody.answer).not.toMatch(/^HTTP\/1\.1 200/);
        // Half the headers, then silence.
        const slowHeaders = await rawExchange(receiver, `POST ${good} HTTP/1.1\r\nHost: hooks\r\n`);
        expect(slowHeaders.ms).toBeLessThan(5_000);
        await handle.signal(finishSignal);
        expect(await handle.result()).toEqual([]);
      } finally {
        await receiver.stop();
      }
    });
  });

  it("bounds a flood: other jobs' deliveries are dropped, and a call is signalled at most twice", async () => {
    await withWorker({ workflowsPath }, async ({ client, taskQueue }) => {
      const receiver = await startWebhookReceiver({
        settings,
        client,
        port: 0,
        host: '127.0.0.1',
        log: capturingLog(),
      });
      try {
        // A call that knows its job (it has submitted), and one that does not yet.
        const submittedId = `call-flood-a-${taskQueue}`;
        const submitted = await client.workflow.start(recordDeliveries, {
          taskQueue,
          workflowId: submittedId,
          args: [REQUEST_ID],
        });
        const waitingId = `call-flood-b-${taskQueue}`;
        const waiting = await client.workflow.start(recordDeliveries, {
          taskQueue,
          workflowId: waitingId,
        });
        const flood = (workflowId: string, n: number) =>
          Promise.all(
            Array.from({ length: n }, (_, i) =>
              post(
                localUrl(receiver, callbackUrlFor(workflowId, settings)),
                completedEnvelope(`forged${i}_1764000000_1`),
              ),
            ),
          );
        const first = await flood(submittedId, 40);
        // Acknowledged (a retry would change nothing) but not forwarded.
        expect(first.every((r) => r.status === 200)).toBe(true);
        expect(
          (
            await post(
              localUrl(receiver, callbackUrlFor(submittedId, settings)),
              completedEnvelope(),
            )
          ).status,
        ).toBe(200);
        await flood(waitingId, 40);

        await submitted.signal(finishSignal);
        await waiting.signal(finishSignal);
        expect(await submitted.result()).toEqual([
          { requestId: REQUEST_ID, body: completedEnvelope() },
        ]);
        expect(await signalCount(client, submittedId)).toBe(1);
        // Its job unknown, the call could not tell forged from real: the bound held.
        expect((await waiting.result()).length).toBeLessThanOrEqual(2);
        expect(await signalCount(client, waitingId)).toBeLessThanOrEqual(2);
        const stats = receiver.stats();
        // Dropped before any signal: as other jobs' once the call's own was known, or as over
        // the bound while the first look-ups were still out.
        expect(stats.foreign).toBeGreaterThanOrEqual(2);
        expect(stats.foreign + stats.overBound).toBeGreaterThanOrEqual(78);
        expect(stats.signalled).toBeLessThanOrEqual(3);
      } finally {
        await receiver.stop();
      }
    });
  });
});
