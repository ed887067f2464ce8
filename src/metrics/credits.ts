// The credit gauges: the service says what a job cost only through GET /usage, so the worker
// reads it for each key that sent requests since its last read, at most every
// PCDS_METRICS_USAGE_INTERVAL_MS, through the shared throttle like any request. An idle worker
// sends nothing; a busy one spends one request per key and interval (free of credits).
import { setTimeout as sleep } from 'node:timers/promises';
import type { PermitGate } from '../throttle/permits.js';
import type { ServiceClients } from '../http/service-clients.js';
import { readUsage } from '../http/usage-read.js';
import { backgroundRequester } from '../contract/index.js';
import { takeKeysWithTraffic } from './instruments.js';

export interface CreditSampler {
  stop(): Promise<void>;
}

export function startCreditSampler(opts: {
  clients: ServiceClients;
  permits: PermitGate;
  intervalMs: number;
  /** Told of a read that failed (the next interval tries again); only the error's name. */
  onError?: (keyId: string, err: unknown) => void;
}): CreditSampler {
  const abort = new AbortController();
  const read = async (keyId: string) => {
    try {
      await readUsage(opts.clients, opts.permits, {
        keyId,
        signal: abort.signal,
        requester: backgroundRequester(),
      });
    } catch (err) {
      if (!abort.signal.aborted) opts.onError?.(keyId, err);
    }
  };
  const loop = (async () => {
    // A first read of every key, so the gauges start from the account's figure.
    let keys = opts.clients.keyIds();
    while (!abort.signal.aborted) {
      for (const keyId of keys) await read(keyId);
      try {
        await sleep(opts.intervalMs, undefined, { signal: abort.signal });
      } catch {
        break;
      }
      keys = takeKeysWithTraffic();
    }
  })();
  return {
    async stop() {
      abort.abort();
      await loop;
    },
  };
}
