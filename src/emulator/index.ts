// The emulator of the Person and Company Data Service: start it in-process with `startEmulator`
// (tests, benchmarks, `pcds dev`) or from the CLI (`pcds emulator`).
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { EmulatorContext } from './context.js';
import { datasetFor } from './dataset/dataset.js';
import { FaultInjector } from './faults.js';
import { submitFingerprint } from './fingerprint.js';
import { JobStore } from './jobs.js';
import { KeyStore } from './keys.js';
import { Ledger } from './ledger.js';
import {
  parseEmulatorOptions,
  type EmulatorOptions,
  type EmulatorOptionsInput,
  type Faults,
} from './options.js';
import { hexOf } from './random.js';
import { RateLimiter } from './rate-limiter.js';
import { buildServer } from './server.js';
import { Stats, type KeyStats } from './stats.js';
import { WebhookDispatcher } from './webhooks.js';

export {
  parseEmulatorOptions,
  loadEmulatorOptionsFile,
  emulatorOptionsSchema,
  faultsSchema,
  EmulatorOptionsError,
} from './options.js';
export type { EmulatorOptions, EmulatorOptionsInput, Faults, PriceTable } from './options.js';
export type { KeyStats } from './stats.js';
export { writeSampleCsv, sampleRows, type SampleOptions } from './sample.js';
export { openApiDocument } from './openapi.js';

export interface DevKey {
  id: string;
  key: string;
  secret: string;
}

export interface RunningEmulator {
  /** Base URL, e.g. http://127.0.0.1:8787 (no trailing slash). */
  url: string;
  port: number;
  adminToken: string;
  devKey: DevKey;
  options: EmulatorOptions;
  /** Direct access for tests: replace faults, read counters, wait for webhooks. */
  setFaults(faults: Partial<Faults>): Faults;
  stats(keyId?: string): KeyStats;
  /**
   * Whether a submit of `input` to `endpoint` reached the server, whatever it was answered (its
   * callback URL aside): what tells a request that may have been sent from one never sent.
   */
  submitArrived(endpoint: string, input: Record<string, unknown>): boolean;
  /** Wait until webhook deliveries under way have finished. */
  drainWebhooks(timeoutMs?: number): Promise<void>;
  /** Drop jobs, usage, rate windows and counters (keys and faults stay). */
  reset(): void;
  stop(): Promise<void>;
}

export const DEV_KEY_ID = 'dev';

/**
 * The development key, derived from the seed so it stays the same across restarts. The admin
 * token is not: anyone who knows the seed could otherwise reset or reconfigure a running emulator.
 */
export function devCredentials(seed: number): { key: string; secret: string } {
  return {
    key: `pcds_dev_${hexOf(12, 'dev-key', seed)}`,
    secret: `pcds_dev_secret_${hexOf(16, 'dev-secret', seed)}`,
  };
}

export async function startEmulator(input: EmulatorOptionsInput = {}): Promise<RunningEmulator> {
  const opts = parseEmulatorOptions(input);
  const derived = devCredentials(opts.seed);
  const adminToken = opts.adminToken ?? `pcds_admin_${randomBytes(16).toString('hex')}`;
  const devKey: DevKey = {
    id: DEV_KEY_ID,
    key: opts.devKey?.key ?? derived.key,
    secret: opts.devKey?.secret ?? derived.secret,
  };

  const keys = new KeyStore();
  // null is an unlimited balance, as for the other keys (`??` would take it for "not given").
  const devCredits = opts.devKey === undefined ? 100_000 : opts.devKey.credits;
  keys.add(devKey.id, devKey.key, devKey.secret, { credits: devCredits });
  for (const k of opts.keys) {
    keys.add(k.id, k.key, k.secret, {
      products: k.products,
      credits: k.credits,
      rate_limits: { per_minute: k.perMinute ?? null, per_hour: k.perHour ?? null },
    });
  }
  const stats = new Stats();
  const ledger = new Ledger();
  const faults = new FaultInjector(opts.faults, opts.seed, opts.timeScale);
  const dataset = datasetFor(opts.seed, opts.dataset);
  const jobs = new JobStore(opts, dataset, keys, ledger, stats, faults);
  const webhooks = new WebhookDispatcher(opts, stats, faults);
  jobs.onSettled = (job, rendered) => webhooks.deliver(job, rendered);
  const ctx: EmulatorContext = {
    opts,
    adminToken,
    devKeyId: devKey.id,
    dataset,
    keys,
    ledger,
    limiter: new RateLimiter(opts.timeScale),
    stats,
    faults,
    jobs,
    webhooks,
  };

  const app = buildServer(ctx);
  // One connection more than the bound is closed as it arrives.
  app.server.maxConnections = opts.listener.maxConnections;
  await app.listen({ port: opts.port, host: opts.host });
  const addr = app.server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const shownHost = host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host;

  return {
    url: `http://${shownHost}:${addr.port}`,
    port: addr.port,
    adminToken,
    devKey,
    options: opts,
    setFaults: (f) => faults.set(f),
    stats: (keyId = DEV_KEY_ID) => {
      jobs.settleDue();
      return structuredClone(stats.of(keyId));
    },
    submitArrived: (endpoint, input) => stats.hasArrived(submitFingerprint(endpoint, input)),
    drainWebhooks: (timeoutMs) => webhooks.drain(timeoutMs),
    reset: () => {
      jobs.reset();
      ledger.reset();
      ctx.limiter.reset();
      stats.reset();
    },
    stop: async () => {
      jobs.stop();
      webhooks.stop();
      await app.close();
    },
  };
}
