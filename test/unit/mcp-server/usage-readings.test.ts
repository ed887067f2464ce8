// The `usage` tool's readings, with an injected clock: a flood costs the pool one request a minute.
import { describe, expect, it } from 'vitest';
import { UsageReadings, USAGE_READING_MS } from '../../../src/mcp-server/usage-readings.js';

function readingsAt() {
  let now = 1_000_000;
  const fetched: { caller: string; month?: number }[] = [];
  const readings = new UsageReadings(
    (caller, query) => {
      fetched.push({ caller, ...(query.month ? { month: query.month } : {}) });
      return Promise.resolve({ period: '2026-11', used: fetched.length });
    },
    () => now,
  );
  return { readings, fetched, advance: (ms: number) => (now += ms) };
}

describe('usage readings', () => {
  it('answer a flood from one reading a minute, and say when it was read', async () => {
    const { readings, fetched, advance } = readingsAt();
    const first = await readings.read('alice', {});
    for (let i = 0; i < 1000; i++) {
      const again = await readings.read('alice', {});
      expect(again).toEqual(first);
      advance(50);
    }
    expect(fetched).toHaveLength(1);
    expect(first.read_at).toBe(new Date(1_000_000).toISOString());
    // 50 s passed: after the minute, one more request.
    advance(USAGE_READING_MS);
    expect((await readings.read('alice', {})).used).toBe(2);
    expect(fetched).toHaveLength(2);
  });

  it('limit each caller to one request a minute, whatever it asks, and serve others from the same reading', async () => {
    const { readings, fetched, advance } = readingsAt();
    await readings.read('alice', {});
    await expect(readings.read('alice', { month: 3 })).rejects.toMatchObject({
      code: 'usage_rate_limited',
      message: expect.stringMatching(/ask again in 60 s/),
    });
    // Bob's same question is answered by Alice's reading; his own new question costs his request.
    await readings.read('bob', {});
    await readings.read('bob', { month: 3 });
    expect(fetched).toEqual([{ caller: 'alice' }, { caller: 'bob', month: 3 }]);
    advance(USAGE_READING_MS);
    await readings.read('alice', { month: 3 });
    expect(fetched).toHaveLength(3);
  });

  it('keep no failed reading: the next caller asks again within its own budget', async () => {
    let calls = 0;
    const readings = new UsageReadings(() => {
      calls += 1;
      return calls === 1 ? Promise.reject(new Error('503')) : Promise.resolve({ ok: true });
    });
    await expect(readings.read('alice', {})).rejects.toThrow('503');
    await new Promise((r) => setImmediate(r));
    expect(await readings.read('bob', {})).toMatchObject({ ok: true });
  });
});
