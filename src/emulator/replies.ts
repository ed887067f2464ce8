// The reply envelope of every answer ({success, data | error, timestamp}). Bodies are serialised
// here with JSON.stringify and sent as strings, which keeps Fastify's per-reply work minimal.
import type { FastifyReply } from 'fastify';
import { formatTimestamp } from '../contract/index.js';

let cachedSecond = -1;
let cachedStamp = '';

/** The interface's timestamp (YYYY-MM-DDThh:mm:ss); formatted once per second under load. */
export function nowStamp(now = Date.now()): string {
  const s = Math.floor(now / 1000);
  if (s !== cachedSecond) {
    cachedSecond = s;
    cachedStamp = formatTimestamp(new Date(s * 1000));
  }
  return cachedStamp;
}

export function successBody(data: unknown): string {
  return JSON.stringify({ success: true, data, timestamp: nowStamp() });
}

/** The success envelope around data already serialised as JSON. */
export function successBodyRaw(dataJson: string): string {
  return `{"success":true,"data":${dataJson},"timestamp":"${nowStamp()}"}`;
}

export function errorBody(code: string, message: string, data?: unknown): string {
  return JSON.stringify(
    data === undefined
      ? { success: false, error: { code, message }, timestamp: nowStamp() }
      : { success: false, data, error: { code, message }, timestamp: nowStamp() },
  );
}

export function sendData(reply: FastifyReply, status: number, data: unknown): FastifyReply {
  return reply
    .code(status)
    .header('content-type', 'application/json; charset=utf-8')
    .send(successBody(data));
}

export function sendError(
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  headers?: Record<string, string>,
): FastifyReply {
  reply.code(status).header('content-type', 'application/json; charset=utf-8');
  if (headers) reply.headers(headers);
  return reply.send(errorBody(code, message));
}

/** A rendered reply that is not yet sent (jobs render once, then go to a poll or a webhook). */
export interface Rendered {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

export function sendRendered(reply: FastifyReply, r: Rendered): FastifyReply {
  reply.code(r.status).header('content-type', 'application/json; charset=utf-8');
  if (r.headers) reply.headers(r.headers);
  return reply.send(r.body);
}
