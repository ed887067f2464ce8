// Tenants through the typed client: two tenants' batches named `f2` and their idempotency keys
// never meet, each reads only its own, the operator names any of them by its scoped id, and a bad
// tenant or weight is refused with the rule before anything starts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPcdsClient } from '../../src/client.js';
import { sampleRows } from '../../src/emulator/index.js';
import { uniqueBatchId } from '../batch/fixtures.js';
import { startCallEnv, withCallWorker, type CallEnv } from '../calls/call-env.js';

let env: CallEnv;
beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

const rows = sampleRows({ rows: 2 }).map((r) => ({ email: r.email }));
const run = `${process.pid}${Date.now().toString(36)}`;

describe('tenants of the typed client', () => {
  it("two tenants' batch `f2` and idempotency key are two of each; each reads its own, the operator both", async () => {
    await withCallWorker(env, async (pcds) => {
      const alice = pcds.withTenant(`alice-${run}`);
      const bob = pcds.withTenant(`bob-${run}`);
      expect([pcds.tenant, alice.tenant]).toEqual(['default', `alice-${run}`]);
      const f2 = uniqueBatchId('f2');
      const options = { batchId: f2, window: 1, keyIds: [env.emulator.devKey.id] };
      const a = await alice.startBatch({ ...options, rows: rows.slice(0, 1) });
      const b = await bob.startBatch({ ...options, rows });
      expect([a.batchId, b.batchId]).toEqual([f2, f2]);
      expect(a.workflowId).toBe(`batch-alice-${run}.${f2}`);
      expect(b.workflowId).not.toBe(a.workflowId);
      expect((await a.result()).total).toBe(1);
      expect((await b.result()).total).toBe(2);
      expect((await alice.getBatch(f2).result()).batchId).toBe(`alice-${run}.${f2}`);
      // Another tenant's scoped id answers as an id that names nothing; the operator reads both.
      expect(() => bob.getBatch(`alice-${run}.${f2}`)).toThrow(
        expect.objectContaining({ code: 'batch_not_found' }),
      );
      expect((await pcds.getBatch(`bob-${run}.${f2}`).result()).total).toBe(2);
      await expect(pcds.getBatch(f2).result()).rejects.toMatchObject({ code: 'batch_not_found' });

      const key = `order-${run}`;
      const first = await alice.startCall('person_enrichment', rows[0], { idempotencyKey: key });
      const again = await alice.startCall('person_enrichment', rows[0], { idempotencyKey: key });
      // Bob's same key with other parameters is his own call, not a conflict with Alice's.
      const his = await bob.startCall('person_enrichment', rows[1], { idempotencyKey: key });
      expect(again.workflowId).toBe(first.workflowId);
      expect(his.workflowId).not.toBe(first.workflowId);
      expect((await his.result()).outcome).toBe('found');
    });
  });

  it('refuses a bad tenant or weight, naming the rule and never the value, before anything connects or starts', async () => {
    const bad = 'not a tenant/../x';
    for (const attempt of [
      () => createPcdsClient({ tenant: bad, address: '127.0.0.1:1' }),
      async () => (await withCallWorker(env, async (pcds) => pcds.withTenant(bad))) as unknown,
    ]) {
      const err = await Promise.resolve()
        .then(attempt)
        .then(
          () => undefined,
          (e: unknown) => e as Error & { code?: string },
        );
      expect(err?.code).toBe('invalid_options');
      expect(err?.message).toMatch(/a tenant id is 1-64 letters, digits/);
      expect(err?.message).not.toContain(bad);
    }
    await withCallWorker(env, async (pcds) => {
      for (const weight of [0, -1, 1001, Number.NaN]) {
        const err = await pcds.startBatch({ batchId: uniqueBatchId('w'), rows, weight }).then(
          () => undefined,
          (e: unknown) => e as Error & { code?: string },
        );
        expect(err?.code, String(weight)).toBe('invalid_options');
        expect(err?.message).toMatch(/a weight is a number from 0.001 to 1000/);
      }
    });
  });
});
