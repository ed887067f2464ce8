// Everything a route needs, built once per emulator instance.
import type { Dataset } from './dataset/dataset.js';
import type { FaultInjector } from './faults.js';
import type { JobStore } from './jobs.js';
import type { KeyStore } from './keys.js';
import type { Ledger } from './ledger.js';
import type { EmulatorOptions } from './options.js';
import type { RateLimiter } from './rate-limiter.js';
import type { Stats } from './stats.js';
import type { WebhookDispatcher } from './webhooks.js';

export interface EmulatorContext {
  opts: EmulatorOptions;
  adminToken: string;
  /** The development key, for which the MCP endpoint's OAuth flow issues tokens. */
  devKeyId: string;
  dataset: Dataset;
  keys: KeyStore;
  ledger: Ledger;
  limiter: RateLimiter;
  stats: Stats;
  faults: FaultInjector;
  jobs: JobStore;
  webhooks: WebhookDispatcher;
}
