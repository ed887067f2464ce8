// The project's Prometheus metrics as data: name, type, help, labels and histogram buckets. The
// instruments, the exporter's bucket overrides, docs/architecture.md and the dashboard test all
// read it.
// Labels carry bounded, non-personal values only: key ids, endpoint paths, kinds, codes.

export type MetricType = 'counter' | 'histogram' | 'gauge';

export interface MetricDef {
  /** The name as exported (counters end in `_total`, units are in the name). */
  name: string;
  type: MetricType;
  help: string;
  labels: readonly string[];
  /** Histograms: bucket upper bounds. */
  buckets?: readonly number[];
}

/** Seconds a request waited for its permit: from no wait to an hour window closed. */
const WAIT_BUCKETS = [0.005, 0.05, 0.25, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800, 3600];

export const METRICS = {
  requests: {
    name: 'pcds_service_requests_total',
    type: 'counter',
    help: 'Requests sent to the data service, by key id, endpoint path, kind (submit, poll, other), transport and HTTP status ("error" when no reply came).',
    labels: ['key', 'endpoint', 'kind', 'transport', 'status'],
  },
  rateLimited: {
    name: 'pcds_service_rate_limited_total',
    type: 'counter',
    help: 'Replies 429 (rate limit exceeded) from the data service, by key id and endpoint path.',
    labels: ['key', 'endpoint'],
  },
  throttleWait: {
    name: 'pcds_throttle_wait_seconds',
    type: 'histogram',
    help: 'Time a request waited at the shared throttle before its permit, by key id, permit kind, requester class and tenant (configured tenants by name, others as "other").',
    labels: ['key', 'kind', 'class', 'tenant'],
    buckets: WAIT_BUCKETS,
  },
  permitsGranted: {
    name: 'pcds_throttle_permits_granted_total',
    type: 'counter',
    help: 'Permits the shared throttle granted, by key id, permit kind (submit, poll, page, usage, feedback), requester class (interactive, batch, background) and tenant (configured tenants by name, others as "other").',
    labels: ['key', 'kind', 'class', 'tenant'],
  },
  permitsRefused: {
    name: 'pcds_throttle_permits_refused_total',
    type: 'counter',
    help: "Permits refused, by key id, code (insufficient_credits: the key's credit breaker is open after a 402; tenant_budget: the tenant spent a budget), requester class and tenant.",
    labels: ['key', 'code', 'class', 'tenant'],
  },
  rows: {
    name: 'pcds_batch_rows_total',
    type: 'counter',
    help: 'Batch rows whose output line was written, by outcome (found, empty, failed, skipped for the credit budget).',
    labels: ['outcome'],
  },
  creditsUsed: {
    name: 'pcds_credits_used',
    type: 'gauge',
    help: "Credits the service reports used this month on the key's account (GET /usage, last read).",
    labels: ['key'],
  },
  creditsAvailable: {
    name: 'pcds_credits_available',
    type: 'gauge',
    help: "Credits the service reports available on the key's account (GET /usage, last read; absent when unlimited).",
    labels: ['key'],
  },
  cacheLookups: {
    name: 'pcds_cache_lookups_total',
    type: 'counter',
    help: 'Result cache lookups, by result (hit: answered with no request and no credit; miss: sent to the service) and source (batch, call).',
    labels: ['result', 'source'],
  },
  webhookDeliveries: {
    name: 'pcds_webhook_deliveries_total',
    type: 'counter',
    help: 'Webhook deliveries the receiver answered, by result (accepted, refused) and reason.',
    labels: ['result', 'reason'],
  },
} as const satisfies Record<string, MetricDef>;

export const METRIC_DEFS: readonly MetricDef[] = Object.values(METRICS);

/** The service's credit read, which the credit sampler sends and does not count as traffic. */
export const USAGE_PATH = '/usage';

/** Request kinds on pcds_service_requests_total. */
export type RequestMetricKind = 'submit' | 'poll' | 'other';

/** Row outcomes on pcds_batch_rows_total. */
export const ROW_OUTCOMES = ['found', 'empty', 'failed', 'skipped'] as const;
export type RowOutcome = (typeof ROW_OUTCOMES)[number];

/**
 * The Temporal SDK's own metrics that the dashboard and docs/architecture.md rely on, as its
 * exporter names them here (prefix `temporal_`, `_total` on counters, durations in seconds). The worker's
 * integration test checks each is served.
 */
export const SDK_METRICS: readonly MetricDef[] = [
  {
    name: 'temporal_workflow_task_schedule_to_start_latency_seconds',
    type: 'histogram',
    help: 'How long workflow tasks waited in the task queue for a worker.',
    labels: ['namespace', 'task_queue'],
  },
  {
    name: 'temporal_workflow_task_execution_latency_seconds',
    type: 'histogram',
    help: 'How long the worker took to run a workflow task.',
    labels: ['namespace', 'task_queue', 'workflow_type'],
  },
  {
    name: 'temporal_activity_schedule_to_start_latency_seconds',
    type: 'histogram',
    help: 'How long activity tasks waited in the task queue for a worker.',
    labels: ['namespace', 'task_queue'],
  },
  {
    name: 'temporal_activity_execution_latency_seconds',
    type: 'histogram',
    help: 'How long activities ran, by activity type.',
    labels: ['namespace', 'task_queue', 'activity_type', 'workflow_type'],
  },
  {
    name: 'temporal_worker_task_slots_available',
    type: 'gauge',
    help: 'Free task slots of the worker, by worker type.',
    labels: ['namespace', 'task_queue', 'worker_type'],
  },
  {
    name: 'temporal_workflow_completed_total',
    type: 'counter',
    help: 'Workflows completed, by workflow type.',
    labels: ['namespace', 'task_queue', 'workflow_type'],
  },
];

/** The sample names a metric is served under (a histogram's _bucket, _sum and _count). */
export function sampleNamesOf(def: MetricDef): string[] {
  return def.type === 'histogram'
    ? [`${def.name}_bucket`, `${def.name}_sum`, `${def.name}_count`]
    : [def.name];
}
