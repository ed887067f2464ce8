// PCDS_TIME_SCALE: the paced durations' defaults follow it, explicit values win, the throttle's
// windows run as many times faster, it is refused against a non-loopback service, and the note an
// estimate or banner prints says when the pace is not the real service's. Every time scale means
// times faster: a value of the other convention (0.05) is refused with the value meant now.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, paceNote } from '../../../src/config.js';
import { paceLine } from '../../../src/cli/dev.js';

describe('PCDS_TIME_SCALE', () => {
  it('leaves every duration as it is at the real pace', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      PCDS_TIME_SCALE: 1,
      PCDS_THROTTLE_TIME_SCALE: 1,
      PCDS_POLL_INTERVAL_MS: 1_000,
      PCDS_MAX_WAIT_MS: 1_800_000,
    });
    expect(paceNote(c)).toBeUndefined();
    expect(paceLine(c)).toMatch(/^the real service's/);
  });

  it("divides the paced durations' defaults, and the throttle's windows follow", () => {
    const c = loadConfig({ PCDS_TIME_SCALE: '60', PCDS_MAX_WAIT_MS: '5000' });
    expect(c).toMatchObject({
      PCDS_TIME_SCALE: 60,
      PCDS_THROTTLE_TIME_SCALE: 60,
      PCDS_POLL_INTERVAL_MS: 17,
      PCDS_WEBHOOK_FALLBACK_POLL_MS: 1_000,
      PCDS_METRICS_USAGE_INTERVAL_MS: 5_000,
      // Set explicitly: taken as given. The network's timeouts never scale.
      PCDS_MAX_WAIT_MS: 5_000,
      PCDS_HTTP_TIMEOUT_MS: 30_000,
    });
    expect(paceNote(c)).toBe("not the real service's pace (emulator at 60x)");
    expect(paceLine(c)).toMatch(/: a minute lasts 1 s; rates, waits and ETAs here/);
    expect(paceNote({ ...c, PCDS_THROTTLE: 'off' })).toBe(
      "not the real service's pace (emulator at 60x, rate limits off)",
    );
    expect(paceNote(loadConfig({ PCDS_THROTTLE: 'off' }))).toBe(
      "not the real service's pace (rate limits off)",
    );
  });

  it('is refused against a service that is not on loopback, without echoing its address', () => {
    for (const url of ['http://localhost:8787', 'http://127.0.0.2:1', 'http://[::1]:8787'])
      expect(loadConfig({ PCDS_TIME_SCALE: '60', PCDS_BASE_URL: url }).PCDS_TIME_SCALE).toBe(60);
    const real = () =>
      loadConfig({ PCDS_TIME_SCALE: '60', PCDS_BASE_URL: 'https://api.service.example' });
    expect(real).toThrow(ConfigError);
    expect(real).toThrow(/^PCDS_TIME_SCALE is only for the bundled emulator/);
    expect(real).not.toThrow(/service\.example/);
    // At the real pace nothing is asked of the address.
    expect(
      loadConfig({ PCDS_TIME_SCALE: '1', PCDS_BASE_URL: 'https://api.service.example' }),
    ).toMatchObject({ PCDS_TIME_SCALE: 1 });
    expect(() => loadConfig({ PCDS_TIME_SCALE: '5000' })).toThrow(
      /PCDS_TIME_SCALE: must be at most 3600/,
    );
  });

  it('one meaning, times faster: a scale below 1 is refused with the value it meant', () => {
    expect(() => loadConfig({ PCDS_TIME_SCALE: '0.5' })).toThrow(
      'PCDS_TIME_SCALE: now means times faster: use 2 instead of 0.5',
    );
    expect(() => loadConfig({ PCDS_THROTTLE_TIME_SCALE: '0.05' })).toThrow(
      'PCDS_THROTTLE_TIME_SCALE: now means times faster: use 20 instead of 0.05',
    );
    expect(() => loadConfig({ PCDS_THROTTLE_TIME_SCALE: '0' })).toThrow(
      /PCDS_THROTTLE_TIME_SCALE: must be from 1 to 3600/,
    );
    expect(loadConfig({ PCDS_THROTTLE_TIME_SCALE: '20' }).PCDS_THROTTLE_TIME_SCALE).toBe(20);
  });
});
