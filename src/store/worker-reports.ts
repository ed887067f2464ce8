// Workers say who they are in the store they use: every half minute a row of ids, versions and
// fingerprints (never a secret, never personal data). A row in a store proves its worker uses
// that store, so `pcds doctor` finds the workers of its own store there, matches them with the
// pollers Temporal lists, and compares their settings with its own by fingerprint.
import { createHmac } from 'node:crypto';
import type { Store } from './open.js';

/** What a worker reports of itself. */
export interface WorkerReport {
  identity: string;
  taskQueue: string;
  namespace: string;
  /** The package version the worker runs. */
  version: string;
  storeId?: string;
  store: string;
  /** The payload key it seals with (id and fingerprint), absent with PCDS_ENCRYPTION=off. */
  encryption?: { keyId: string; fingerprint: string };
  /** The id secret's fingerprint, absent when it has none. */
  idSecret?: { fingerprint: string };
  /** The service keys it holds: ids and limits only. */
  keys: { id: string; perMinute: number; perHour: number }[];
  throttle: 'on' | 'off';
  webhookPublicUrl?: string;
  startedAt: number;
  seenAt: number;
}

/** How often a worker reports, and how old a report may be to stand for a live worker. */
export const WORKER_REPORT_EVERY_MS = 30_000;
export const WORKER_REPORT_FRESH_MS = 120_000;

/**
 * A secret's fingerprint: an HMAC of a fixed label keyed with it, 64 bits in hex. Two processes
 * with the same secret show the same fingerprint; the fingerprint gives the secret away no more
 * than a key check value does.
 */
export function secretFingerprint(
  secret: Uint8Array,
  purpose: 'payload key' | 'id secret',
): string {
  return createHmac('sha256', secret)
    .update(`pcds ${purpose} fingerprint v1`)
    .digest('hex')
    .slice(0, 16);
}

export async function writeWorkerReport(store: Store, report: WorkerReport): Promise<void> {
  const row = {
    identity: report.identity,
    task_queue: report.taskQueue,
    namespace: report.namespace,
    report: JSON.stringify(report),
    started_at: report.startedAt,
    seen_at: report.seenAt,
  };
  await store.db
    .insertInto('pcds_workers')
    .values(row)
    .onConflict((oc) =>
      oc.column('identity').doUpdateSet({
        task_queue: row.task_queue,
        namespace: row.namespace,
        report: row.report,
        started_at: row.started_at,
        seen_at: row.seen_at,
      }),
    )
    .execute();
}

export async function removeWorkerReport(store: Store, identity: string): Promise<void> {
  await store.db.deleteFrom('pcds_workers').where('identity', '=', identity).execute();
}

/** The reports of workers seen lately on a task queue of a namespace; old rows are dropped. */
export async function freshWorkerReports(
  store: Store,
  where: { taskQueue: string; namespace: string },
  now = Date.now(),
): Promise<WorkerReport[]> {
  // A worker gone for a day leaves nothing behind.
  await store.db
    .deleteFrom('pcds_workers')
    .where('seen_at', '<', now - 86_400_000)
    .execute();
  const rows = await store.db
    .selectFrom('pcds_workers')
    .select('report')
    .where('task_queue', '=', where.taskQueue)
    .where('namespace', '=', where.namespace)
    .where('seen_at', '>=', now - WORKER_REPORT_FRESH_MS)
    .execute();
  return rows.map((r) => JSON.parse(r.report) as WorkerReport);
}
