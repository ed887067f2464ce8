// When the permit gate runs a caller's last step before sending (a submit's claim): only once
// the slot is due, so a caller lost while it waits for its slot holds no claim. The throttle
// workflow is played by a fake client that answers each permit batch as told.
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { interactiveRequester } from '../../../src/contract/index.js';
import type { PermitBatch } from '../../../src/throttle/protocol.js';
import type { PermitAnswer } from '../../../src/throttle/windows.js';
import { createWorkflowPermitGate } from '../../../src/worker/permit-gate.js';

const requester = interactiveRequester();
const limits = { perMinute: 100, perHour: 1_000 };

/** A client whose throttle answers every request with `answer(request, now)`; it logs the requests. */
function fakeThrottle(answer: (r: PermitBatch['requests'][number], now: number) => PermitAnswer) {
  const asked: PermitBatch['requests'] = [];
  const respond = (_def: unknown, { args }: { args: [PermitBatch] }) => {
    asked.push(...args[0].requests);
    return Promise.resolve(args[0].requests.map((r) => answer(r, Date.now())));
  };
  const client = {
    workflow: {
      executeUpdateWithStart: respond,
      getHandle: () => ({ executeUpdate: respond }),
    },
  } as unknown as Client;
  const gate = createWorkflowPermitGate({
    client,
    taskQueue: 'unused',
    keys: [{ id: 'k1' }],
    defaultLimits: limits,
  });
  return { gate, asked };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the permit gate and the step before sending', () => {
  it('runs the step once the slot is due, not while the caller still waits for it', async () => {
    let slot = 0;
    const { gate } = fakeThrottle((r, now) => {
      slot = now + 400;
      return { kind: 'granted', at: slot, confirm: false };
    });
    let claimedAt: number | undefined;
    await gate.acquire('k1', 'submit', {
      requester,
      beforeSend: () => {
        claimedAt = Date.now();
        return Promise.resolve();
      },
    });
    expect(claimedAt).toBeDefined();
    expect(claimedAt!).toBeGreaterThanOrEqual(slot);
  });

  it('leaves no claim behind when the caller is lost while it waits for its slot', async () => {
    const { gate } = fakeThrottle((_r, now) => ({
      kind: 'granted',
      at: now + 1_000,
      confirm: false,
    }));
    const lost = new AbortController();
    let claimed = false;
    const acquired = gate.acquire('k1', 'submit', {
      requester,
      signal: lost.signal,
      beforeSend: () => {
        claimed = true;
        return Promise.resolve();
      },
    });
    // Well past the moment one round trip before the slot, well before the slot.
    await sleep(900);
    lost.abort();
    await expect(acquired).rejects.toThrow();
    expect(claimed).toBe(false);
  });

  it('sends right after a slow claim: a claim is never held over a wait for another slot', async () => {
    const { gate, asked } = fakeThrottle((_r, now) => ({
      kind: 'granted',
      at: now + 50,
      confirm: false,
    }));
    let claimedAt = 0;
    await gate.acquire('k1', 'submit', {
      requester,
      beforeSend: async () => {
        await sleep(400);
        claimedAt = Date.now();
      },
    });
    expect(Date.now() - claimedAt).toBeLessThan(50);
    expect(asked.filter((r) => r.move)).toEqual([]);
  });

  it('moves a slot it woke up too late for before claiming, and claims once', async () => {
    let claims = 0;
    const { gate, asked } = fakeThrottle((r, now) =>
      // The first grant is already half a second old when it arrives: it must be moved.
      r.move
        ? { kind: 'granted', at: now + 50, confirm: false }
        : { kind: 'granted', at: now - 500, confirm: false },
    );
    await gate.acquire('k1', 'submit', {
      requester,
      beforeSend: () => {
        claims += 1;
        return Promise.resolve();
      },
    });
    expect(claims).toBe(1);
    expect(asked.filter((r) => r.move)).toHaveLength(1);
  });
});
