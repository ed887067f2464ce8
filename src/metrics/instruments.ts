// Where the project's code records its metrics. Until the worker installs the exporter
// (src/metrics/exporter.ts) every record goes to a no-op meter, so tests, the CLI and library
// users pay nothing and export nothing. Counted where the work happens (the service client, the
// throttle gate, the output writer, the webhook receiver), never in workflow code: a replay
// repeats no activity, no request and no write, so nothing here is counted twice.
import {
  noopMetricMeter,
  type MetricCounter,
  type MetricGauge,
  type MetricHistogram,
  type MetricMeter,
} from '@temporalio/common';
import {
  METRICS,
  ROW_OUTCOMES,
  USAGE_PATH,
  type MetricDef,
  type RequestMetricKind,
  type RowOutcome,
} from './catalogue.js';

/** The name a metric is created under: the SDK's exporter adds `_total` to counters itself. */
export const meterNameOf = (def: MetricDef) =>
  def.type === 'counter' ? def.name.replace(/_total$/, '') : def.name;

function instrumentsOf(meter: MetricMeter) {
  const counter = (def: MetricDef): MetricCounter =>
    meter.createCounter(meterNameOf(def), undefined, def.help);
  const gauge = (def: MetricDef): MetricGauge =>
    meter.createGauge(meterNameOf(def), 'int', undefined, def.help);
  const histogram = (def: MetricDef): MetricHistogram =>
    meter.createHistogram(meterNameOf(def), 'float', undefined, def.help);
  return {
    requests: counter(METRICS.requests),
    rateLimited: counter(METRICS.rateLimited),
    throttleWait: histogram(METRICS.throttleWait),
    permitsGranted: counter(METRICS.permitsGranted),
    permitsRefused: counter(METRICS.permitsRefused),
    rows: counter(METRICS.rows),
    creditsUsed: gauge(METRICS.creditsUsed),
    creditsAvailable: gauge(METRICS.creditsAvailable),
    webhookDeliveries: counter(METRICS.webhookDeliveries),
    cacheLookups: counter(METRICS.cacheLookups),
  };
}

let instruments = instrumentsOf(noopMetricMeter);
let recording = false;

/** Sends every later record to `meter` (the exporter calls this once, at worker start). */
export function useMetricMeter(meter: MetricMeter): void {
  instruments = instrumentsOf(meter);
  recording = true;
}

/** Whether records go anywhere (an exporter is installed): work done only for metrics waits on it. */
export const metricsRecorded = (): boolean => recording;

export interface RequestRecord {
  key: string;
  endpoint: string;
  kind: RequestMetricKind;
  transport: string;
  /** The HTTP status, or undefined when no reply came. */
  status: number | undefined;
}

/** Keys that sent a request other than GET /usage since the credit sampler last asked. */
const keysWithTraffic = new Set<string>();

/** The keys whose credits may have moved since the last call (their usage is worth reading). */
export function takeKeysWithTraffic(): string[] {
  const keys = [...keysWithTraffic];
  keysWithTraffic.clear();
  return keys;
}

export function recordRequest(r: RequestRecord): void {
  if (r.endpoint !== USAGE_PATH) keysWithTraffic.add(r.key);
  instruments.requests.add(1, {
    key: r.key,
    endpoint: r.endpoint,
    kind: r.kind,
    transport: r.transport,
    status: r.status === undefined ? 'error' : String(r.status),
  });
  if (r.status === 429) instruments.rateLimited.add(1, { key: r.key, endpoint: r.endpoint });
}

/** Who asked for a permit, as labels: its class, and its tenant (bounded: see meteredPermitGate). */
export interface PermitLabels {
  class: string;
  tenant: string;
}

export function recordPermit(key: string, kind: string, waitedMs: number, who: PermitLabels): void {
  instruments.permitsGranted.add(1, { key, kind, ...who });
  instruments.throttleWait.record(Math.max(0, waitedMs) / 1000, { key, kind, ...who });
}

export function recordPermitRefused(key: string, code: string, who: PermitLabels): void {
  instruments.permitsRefused.add(1, { key, code, ...who });
}

export function recordRows(outcome: RowOutcome, count: number): void {
  if (count > 0) instruments.rows.add(count, { outcome });
}

/** Result cache lookups of a batch's rows or a single call: hits answered, misses sent. */
export function recordCacheLookups(source: 'batch' | 'call', hits: number, misses: number): void {
  if (hits > 0) instruments.cacheLookups.add(hits, { result: 'hit', source });
  if (misses > 0) instruments.cacheLookups.add(misses, { result: 'miss', source });
}

export function recordCredits(key: string, used: number, available: number | undefined): void {
  instruments.creditsUsed.set(used, { key });
  if (available !== undefined) instruments.creditsAvailable.set(available, { key });
}

/**
 * Result and reason of each way the receiver answers a delivery. Accepted: answered 2xx and
 * nothing more to send (signalled, a duplicate, or for a call already finished). Refused: a bad
 * token (404), a malformed body (400), a request id not the call's or past the call's bound
 * (dropped), or Temporal not taking the signal (503, the service retries).
 */
const WEBHOOK_OUTCOMES = {
  signalled: { result: 'accepted', reason: 'signalled' },
  stored: { result: 'accepted', reason: 'stored' },
  duplicates: { result: 'accepted', reason: 'duplicate' },
  noWorkflow: { result: 'accepted', reason: 'call_finished' },
  refused: { result: 'refused', reason: 'bad_token' },
  malformed: { result: 'refused', reason: 'malformed' },
  foreign: { result: 'refused', reason: 'foreign_request' },
  overBound: { result: 'refused', reason: 'over_bound' },
  failed: { result: 'refused', reason: 'signal_failed' },
} as const satisfies Record<string, { result: 'accepted' | 'refused'; reason: string }>;

/**
 * How a delivery ended, named as the receiver's counters are. The receiver knows nothing of
 * metrics: where it is started, recordWebhookDelivery is passed as its onDelivery, and that
 * assignment fails to compile if the receiver ever reports an outcome missing here.
 */
export type WebhookDeliveryOutcome = keyof typeof WEBHOOK_OUTCOMES;

export function recordWebhookDelivery(outcome: WebhookDeliveryOutcome): void {
  instruments.webhookDeliveries.add(1, WEBHOOK_OUTCOMES[outcome]);
}

const isRowOutcome = (v: unknown): v is RowOutcome =>
  typeof v === 'string' && (ROW_OUTCOMES as readonly string[]).includes(v);

/**
 * Counts the batch row lines an output write wrote, by outcome (lines without a row outcome, such
 * as a search export's, are not rows; a line offered again for a row already written is not
 * written, so not counted twice).
 */
export function recordRowLines(written: readonly object[]): void {
  const counts = new Map<RowOutcome, number>();
  for (const line of written) {
    const outcome = (line as { outcome?: unknown }).outcome;
    if (isRowOutcome(outcome)) counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
  }
  for (const [outcome, n] of counts) recordRows(outcome, n);
}
