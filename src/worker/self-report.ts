// What a worker reports of itself into its store (store/worker-reports.ts), built from its
// configuration: ids, limits, versions and fingerprints of its secrets, never a secret.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { keyringFromSettings } from '../codec/settings.js';
import type { Config } from '../config.js';
import type { IdentifiedStore, WorkerRegistry } from '../store/index.js';
import {
  secretFingerprint,
  WORKER_REPORT_EVERY_MS,
  type WorkerReport,
} from '../store/worker-reports.js';
import { idSecretFromSettings } from '../codec/idempotency.js';
import { packageVersion } from '../version.js';

/**
 * The identity a worker polls Temporal with: the SDK's `pid@host`, plus a few random characters
 * so that two workers of one process (tests, an embedding service) stay apart in the store.
 */
export const newWorkerIdentity = () =>
  `${process.pid}@${hostname()}#${randomBytes(2).toString('hex')}`;

/** The fingerprints of this process's payload key and id secret (what doctor compares). */
export function secretFingerprints(config: Config): Pick<WorkerReport, 'encryption' | 'idSecret'> {
  const keyring = keyringFromSettings(config);
  const current = keyring?.keys.get(keyring.currentKeyId);
  const idSecret = idSecretFromSettings(config);
  return {
    ...(keyring && current
      ? {
          encryption: {
            keyId: keyring.currentKeyId,
            fingerprint: secretFingerprint(current, 'payload key'),
          },
        }
      : {}),
    ...(idSecret
      ? { idSecret: { fingerprint: secretFingerprint(idSecret.key, 'id secret') } }
      : {}),
  };
}

export function selfReport(
  config: Config,
  where: { identity: string; taskQueue: string; storeId?: string; store: string },
  startedAt: number,
  now = Date.now(),
): WorkerReport {
  return {
    identity: where.identity,
    taskQueue: where.taskQueue,
    namespace: config.PCDS_TEMPORAL_NAMESPACE,
    version: packageVersion(),
    ...(where.storeId ? { storeId: where.storeId } : {}),
    store: where.store,
    ...secretFingerprints(config),
    keys: config.keys.map((k) => ({
      id: k.id,
      perMinute: k.perMinute ?? config.PCDS_RATE_PER_MINUTE,
      perHour: k.perHour ?? config.PCDS_RATE_PER_HOUR,
    })),
    throttle: config.PCDS_THROTTLE,
    ...(config.PCDS_WEBHOOK_PUBLIC_URL ? { webhookPublicUrl: config.PCDS_WEBHOOK_PUBLIC_URL } : {}),
    startedAt,
    seenAt: now,
  };
}

/** How long a stopping worker waits for its last report to be removed. */
const STOP_WAIT_MS = 2_000;

/**
 * Reports the worker into its store now and every half minute until stopped, when its row goes.
 * A store that is away is tried again at the next turn: the report never stops the worker.
 */
export function startSelfReports(
  config: Config,
  store: { get(): Promise<IdentifiedStore & WorkerRegistry> },
  where: { identity: string; taskQueue: string },
): { stop(): Promise<void> } {
  const startedAt = Date.now();
  let stopped = false;
  const once = async () => {
    const batches = await store.get();
    const { id, shown } = batches.identity;
    await batches.reportWorker(
      selfReport(config, { ...where, ...(id ? { storeId: id } : {}), store: shown }, startedAt),
    );
  };
  let running = once().catch(() => undefined);
  const timer = setInterval(() => {
    if (!stopped) running = running.then(() => once().catch(() => undefined));
  }, WORKER_REPORT_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      // A shutdown never waits on the store (a busy file, a database away) for more than a
      // moment: a row left behind goes stale and stops counting after two minutes.
      const removed = running.then(() =>
        store
          .get()
          .then((b) => b.removeWorkerReport(where.identity))
          .catch(() => undefined),
      );
      let timeout: NodeJS.Timeout | undefined;
      await Promise.race([
        removed,
        new Promise<void>((resolve) => (timeout = setTimeout(resolve, STOP_WAIT_MS))),
      ]);
      clearTimeout(timeout);
    },
  };
}
