// The throttles' scheduling settings: the defaults (fair, a 10% reserve, a quarter of the pool's
// hour for each tenant not listed), PCDS_TENANTS read and refused with the setting and the
// entry's position (never a value), and each key's part of a pool-wide budget.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { keyPolicy } from '../../../src/worker/permit-gate.js';
import { SCHEDULER_REVISION } from '../../../src/throttle/scheduler.js';

const pool = JSON.stringify([
  { id: 'k1', key: 'a', secret: 's', perHour: 1_000 },
  { id: 'k2', key: 'b', secret: 's', perHour: 3_000 },
]);

describe('scheduling settings', () => {
  it('defaults to the fair scheduler, a 10% reserve and a quarter of the pool an hour for unlisted tenants', () => {
    const c = loadConfig({ PCDS_API_KEYS: pool });
    expect(c.scheduling).toEqual({
      mode: 'fair',
      reserve: 0.1,
      tenants: {},
      unlisted: { requestsPerHour: 1_000 },
    });
    expect(loadConfig({ PCDS_TENANT_BUDGET: 'off' }).scheduling.unlisted).toBeUndefined();
    expect(loadConfig({ PCDS_TENANT_BUDGET: '250' }).scheduling.unlisted).toEqual({
      requestsPerHour: 250,
    });
  });

  it('reads tenants with weights and budgets, and the first-come scheduler', () => {
    const c = loadConfig({
      PCDS_THROTTLE_SCHEDULER: 'first-come',
      PCDS_INTERACTIVE_RESERVE: '0.2',
      PCDS_TENANTS: JSON.stringify({
        alice: { weight: 2, requestsPerHour: 500, creditsPerDay: 1_000 },
        default: { weight: 3 },
      }),
    });
    expect(c.scheduling).toMatchObject({
      mode: 'first-come',
      reserve: 0.2,
      tenants: {
        alice: { weight: 2, requestsPerHour: 500, creditsPerDay: 1_000 },
        default: { weight: 3 },
      },
    });
  });

  it.each([
    ['not json', /^PCDS_TENANTS must be a JSON object/],
    ['[1, 2]', /^PCDS_TENANTS must be a JSON object/],
    ['{"alice": {"weight": 0}}', /^PCDS_TENANTS entry 1: weight: a weight is a number from/],
    ['{"alice": {}, "bob": {"requestsPerHour": -3}}', /^PCDS_TENANTS entry 2: requestsPerHour: /],
    ['{"alice": {"budget": 3}}', /^PCDS_TENANTS entry 1: only weight, requestsPerHour/],
    ['{"al ice@x.com": {}}', /^PCDS_TENANTS entry 1: a tenant id is 1-64/],
  ])('refuses PCDS_TENANTS=%s naming the entry, never the value', (value, message) => {
    let error: unknown;
    try {
      loadConfig({ PCDS_TENANTS: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toMatch(/al ice|x\.com|-3|budget": 3/);
  });

  it('refuses a reserve above one half and an unknown scheduler', () => {
    expect(() => loadConfig({ PCDS_INTERACTIVE_RESERVE: '0.6' })).toThrow(
      /PCDS_INTERACTIVE_RESERVE: at most 0.5/,
    );
    expect(() => loadConfig({ PCDS_THROTTLE_SCHEDULER: 'lottery' })).toThrow(
      /PCDS_THROTTLE_SCHEDULER/,
    );
    expect(() => loadConfig({ PCDS_TENANT_BUDGET: 'lots' })).toThrow(/PCDS_TENANT_BUDGET/);
  });

  it("gives each key the part of a pool-wide budget its hour limit is of the pool's", () => {
    const c = loadConfig({
      PCDS_API_KEYS: pool,
      PCDS_TENANTS: JSON.stringify({
        alice: { weight: 2, requestsPerHour: 400, creditsPerDay: 80 },
      }),
    });
    const k1 = keyPolicy(c.scheduling, 1_000, 4_000);
    const k2 = keyPolicy(c.scheduling, 3_000, 4_000);
    expect(k1.tenants.alice).toEqual({ weight: 2, requestsPerHour: 100, creditsPerDay: 20 });
    expect(k2.tenants.alice).toEqual({ weight: 2, requestsPerHour: 300, creditsPerDay: 60 });
    expect(k1.unlisted).toEqual({ requestsPerHour: 250 });
    expect(k1).toMatchObject({ mode: 'fair', reserve: 0.1 });
    // Workers send the rules they know; a throttle replaying a history without them keeps revision 1.
    expect(k1.revision).toBe(SCHEDULER_REVISION);
    expect(keyPolicy(undefined, 1_000, 4_000).revision).toBe(SCHEDULER_REVISION);
  });
});
