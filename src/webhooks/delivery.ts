// Reading one delivered body: it must be the envelope a poll returns, naming its job's request_id,
// except a failure envelope, which has no `data` to name it in (the workflow confirms those by
// polling). Reasons for a refusal are fixed phrases: a body may hold PII, so nothing is echoed.
import { jobView, parseEnvelope } from '../contract/envelope.js';

/** request_id is opaque; this only bounds what a receiver forwards and logs. */
const REQUEST_ID_MAX = 200;
const REQUEST_ID_CHARS = /^[A-Za-z0-9_.:-]+$/;

export type DeliveryReading =
  | { ok: true; requestId?: string; body: unknown }
  | { ok: false; reason: 'not_json' | 'not_an_envelope' | 'no_request_id' };

export function readDelivery(raw: string): DeliveryReading {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return { ok: false, reason: 'not_json' };
  }
  const envelope = parseEnvelope(body);
  if (!envelope) return { ok: false, reason: 'not_an_envelope' };
  const requestId = jobView(envelope.data).requestId;
  if (requestId === undefined && !envelope.success && envelope.error) return { ok: true, body };
  if (!requestId || requestId.length > REQUEST_ID_MAX || !REQUEST_ID_CHARS.test(requestId)) {
    return { ok: false, reason: 'no_request_id' };
  }
  return { ok: true, requestId, body };
}
