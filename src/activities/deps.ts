// What the activities need from the worker process. Secrets live here (inside the service
// clients) and nowhere else: activity inputs and results name keys by their id.
import type { Config } from '../config.js';
import type { PermitGate } from '../throttle/permits.js';
import type { ServiceClients } from '../http/service-clients.js';
import type { LazyBatchStore } from '../store/index.js';

export interface ActivityDeps {
  config: Config;
  clients: ServiceClients;
  permits: PermitGate;
  /** The receiver's URL for a workflow's webhook delivery; webhook mode is refused without it. */
  callbackUrlFor?: (workflowId: string) => string;
  /** Where stored batches keep their rows, results and journal (opened on first use). */
  store?: LazyBatchStore;
  /** Aborted when the worker running these activities shuts down (createWorker's). */
  workerShutdown?: AbortSignal;
}
