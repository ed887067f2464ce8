// Everything a route needs, built once per emulator instance.
import type { Dataset } from './dataset/dataset';
import type { FaultInjector } from './faults';
import type { JobStore } from './jobs';
import type { KeyStore } from './keys';
import type { Ledger } from './ledger';
import type { EmulatorOptions } from './options';
import type { RateLimiter } from './rate-limiter';
import type { Stats } from './stats';
import type { WebhookDispatcher } from './webhooks';

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
