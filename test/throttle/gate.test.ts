// The shared throttle through its permit gate, against the real dev server: permits from two
// gates (as two processes would hold) respect both windows together, the credit breaker refuses
// submits until reset, and the state survives a worker restart.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PermitRefusedError } from '../../src/throttle/permits.js';
import { interactiveRequester } from '../../src/contract/index.js';

const requester = interactiveRequester();
import { createWorkflowPermitGate } from '../../src/worker/permit-gate.js';
import { readThrottleStatus, resumeCredits } from '../../src/client/throttle-operator.js';
import { connectClient, uniqueTaskQueue, withWorker } from '../harness/temporal.js';

const workflowsPath = resolve(fileURLToPath(import.meta.url), '../fixtures/workflows.ts');
// 50 times faster: a "minute" of 1.2 s and an "hour" of 72 s.
const TIME_SCALE = 50;

function maxInAnyWindow(times: number[], span: number): number {
  let max = 0;
  for (const x of times) max = Math.max(max, times.filter((t) => t > x - span && t <= x).length);
  return max;
}

describe('workflow permit gate', () => {
  it('keeps two gates on one key within both windows together, bursting to the minute limit', async () => {
    // Twenty times faster here (a "minute" of 3 s), every duration alike: the first burst waits
    // for the throttle's workflow to start, which no time scale shortens.
    const BURST_SCALE = 20;
    const MINUTE = 60_000 / BURST_SCALE;
    await withWorker({ workflowsPath }, async ({ taskQueue }) => {
      const keyId = `k-${taskQueue}`;
      const limits = { perMinute: 6, perHour: 15 };
      const gates = await Promise.all(
        [0, 1].map(async () => {
          const { client, connection } = await connectClient();
          const gate = createWorkflowPermitGate({
            client,
            taskQueue,
            keys: [{ id: keyId, ...limits }],
            defaultLimits: limits,
            timeScale: BURST_SCALE,
          });
          return { gate, connection };
        }),
      );
      try {
        const started = Date.now();
        const times: number[] = [];
        await Promise.all(
          Array.from({ length: 15 }, (_, i) =>
            gates[i % 2].gate
              .acquire(keyId, i % 3 === 0 ? 'submit' : 'poll', { requester })
              .then(() => times.push(Date.now())),
          ),
        );
        times.sort((a, b) => a - b);
        expect(maxInAnyWindow(times, MINUTE)).toBeLessThanOrEqual(6);
        // The first burst goes at once; 15 permits need three minute-windows, not fifteen tenths of one.
        expect(times[5] - started).toBeLessThan(MINUTE);
        expect(times[14] - times[0]).toBeGreaterThanOrEqual(2 * MINUTE);
        expect(times[14] - times[0]).toBeLessThan(4 * MINUTE);
        const { client } = await connectClient();
        const [status] = await readThrottleStatus(client, [keyId]);
        expect(status.snapshot.hour).toMatchObject({ used: 15, limit: 15 });
        expect(status.snapshot.counts.submit + status.snapshot.counts.poll).toBe(15);
      } finally {
        await Promise.all(gates.map((g) => g.connection.close()));
      }
    });
  });

  it('refuses submits while the credit breaker is open and lets polls through; resume closes it', async () => {
    await withWorker({ workflowsPath }, async ({ taskQueue, client }) => {
      const keyId = `k-${taskQueue}`;
      const gate = createWorkflowPermitGate({
        client,
        taskQueue,
        keys: [{ id: keyId }],
        defaultLimits: { perMinute: 50, perHour: 500 },
        timeScale: TIME_SCALE,
      });
      await gate.creditsExhausted(keyId);
      await expect(gate.acquire(keyId, 'submit', { requester })).rejects.toBeInstanceOf(
        PermitRefusedError,
      );
      await expect(gate.acquire(keyId, 'submit', { requester })).rejects.toMatchObject({
        code: 'insufficient_credits',
        keyId,
      });
      await gate.acquire(keyId, 'poll', { requester });
      const [paused] = await readThrottleStatus(client, [keyId]);
      expect(paused.snapshot.breaker.open).toBe(true);
      expect(await resumeCredits(client, keyId, 'test')).toEqual({ wasOpen: true });
      await gate.acquire(keyId, 'submit', { requester });
      expect(await resumeCredits(client, keyId, 'test')).toEqual({ wasOpen: false });
    });
  });

  it('keeps its state across a worker restart', async () => {
    const taskQueue = uniqueTaskQueue('throttle-restart');
    const keyId = `k-${taskQueue}`;
    const limits = { perMinute: 4, perHour: 100 };
    // A long "minute" (30 s: twice as fast) so the window is still full after the restart, however
    // slow a loaded machine makes the restart (a 6 s minute slid past it once).
    const opts = {
      taskQueue,
      keys: [{ id: keyId, ...limits }],
      defaultLimits: limits,
      timeScale: 2,
    };
    await withWorker({ workflowsPath, taskQueue }, async ({ client }) => {
      const gate = createWorkflowPermitGate({ client, ...opts });
      for (let i = 0; i < 4; i++) await gate.acquire(keyId, 'submit', { requester });
    });
    await withWorker({ workflowsPath, taskQueue }, async ({ client }) => {
      const [status] = await readThrottleStatus(client, [keyId]);
      expect(status.snapshot.minute.used).toBe(4);
      // A fresh gate (a restarted process) still waits for the window the first one filled.
      const gate = createWorkflowPermitGate({ client, ...opts });
      const controller = new AbortController();
      const waiting = gate.acquire(keyId, 'poll', { requester, signal: controller.signal });
      const outcome = await Promise.race([
        waiting.then(() => 'granted'),
        new Promise((r) => setTimeout(() => r('still waiting'), 1_500)),
      ]);
      expect(outcome).toBe('still waiting');
      controller.abort();
      await expect(waiting).rejects.toThrow();
    });
  });
});
