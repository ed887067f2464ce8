// Where the worker's metrics listen: loopback unless PCDS_METRICS_HOST names another address
// (test/metrics/worker-metrics.test.ts checks a real listener).
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';

describe('PCDS_METRICS_HOST', () => {
  it('is 127.0.0.1 when unset', () => {
    expect(loadConfig({ PCDS_METRICS_PORT: '9464' }).PCDS_METRICS_HOST).toBe('127.0.0.1');
  });

  it('is the address given', () => {
    for (const host of ['0.0.0.0', '::', '10.1.2.3'])
      expect(loadConfig({ PCDS_METRICS_HOST: host }).PCDS_METRICS_HOST).toBe(host);
  });

  it('refuses an empty address', () => {
    expect(() => loadConfig({ PCDS_METRICS_HOST: '' })).toThrow(/PCDS_METRICS_HOST/);
  });
});
