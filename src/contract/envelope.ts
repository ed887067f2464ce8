// The reply envelope ({success, data, error, timestamp}) and the job object inside it, including
// the flat variant some replies use (job fields at the top level, no envelope).
import { z } from 'zod';

export const errorBody = z.object({ code: z.string(), message: z.string().default('') });
export type ErrorBody = z.infer<typeof errorBody>;

export interface Envelope {
  success: boolean;
  data?: Record<string, unknown>;
  error?: ErrorBody;
  timestamp?: string;
}

const envelopeSchema = z.object({
  success: z.boolean(),
  data: z.record(z.string(), z.unknown()).optional().nullable(),
  error: errorBody.optional().nullable(),
  timestamp: z.string().optional(),
});

const FLAT_KEYS = ['request_id', 'status', 'completed', 'result', 'results'];

/** Parse a reply body; undefined when it is neither an envelope nor a flat job object. */
export function parseEnvelope(body: unknown): Envelope | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const rec = body as Record<string, unknown>;
  if ('success' in rec) {
    const p = envelopeSchema.safeParse(rec);
    if (!p.success) return undefined;
    const out: Envelope = { success: p.data.success };
    if (p.data.data) out.data = p.data.data;
    if (p.data.error) out.error = p.data.error;
    if (p.data.timestamp) out.timestamp = p.data.timestamp;
    return out;
  }
  if (FLAT_KEYS.some((k) => k in rec)) {
    const err = errorBody.safeParse(rec.error);
    const { timestamp, ...data } = rec;
    return {
      success: !err.success,
      data,
      ...(err.success ? { error: err.data } : {}),
      ...(typeof timestamp === 'string' ? { timestamp } : {}),
    };
  }
  return undefined;
}

/** The job object fields, read leniently from `data`. */
export interface JobView {
  requestId?: string;
  status?: string;
  completed?: boolean;
  message?: string;
  error?: ErrorBody | null;
  createdOn?: string;
  completedOn?: string;
}

export function jobView(data: Record<string, unknown> | undefined): JobView {
  if (!data) return {};
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const err = errorBody.safeParse(data.error);
  const view: JobView = {};
  const rid = str(data.request_id);
  if (rid) view.requestId = rid;
  const status = str(data.status);
  if (status) view.status = status;
  if (typeof data.completed === 'boolean') view.completed = data.completed;
  const msg = str(data.message);
  if (msg) view.message = msg;
  if (err.success) view.error = err.data;
  else if (data.error === null) view.error = null;
  const c = str(data.created_on);
  if (c) view.createdOn = c;
  const d = str(data.completed_on);
  if (d) view.completedOn = d;
  return view;
}

/** Epoch ms of an interface timestamp (UTC; a trailing Z and a fraction are accepted), or undefined. */
export function timestampMs(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?)Z?$/.exec(text.trim());
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}Z`);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * How long the service says the job ran (completed_on - created_on, its own clock), or undefined
 * when it does not say. The timestamps have whole seconds: the true duration is within 1 s of it.
 */
export function serviceJobMs(view: JobView): number | undefined {
  const created = timestampMs(view.createdOn);
  const completed = timestampMs(view.completedOn);
  if (created === undefined || completed === undefined || completed < created) return undefined;
  return completed - created;
}

/** The interface's timestamp form: YYYY-MM-DDThh:mm:ss (UTC, no fraction, no zone). */
export function formatTimestamp(date: Date): string {
  return date.toISOString().slice(0, 19);
}

export const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

/**
 * request_id: a long hexadecimal token, a Unix-seconds number and a small integer, joined by
 * underscores. The id is opaque, so hex digits of either case are accepted.
 */
export const REQUEST_ID_RE = /^[0-9a-f]{16,}_\d{9,11}_\d{1,4}$/i;
