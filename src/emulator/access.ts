// The checks every keyed request passes, in order: credentials (headers, or api_key/api_secret
// parameters as the fallback), the per-key rate limit (counted at arrival), injected faults, the
// IP allow-list, the subscription and the endpoint's product. Usage has its own error codes.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Product } from '../contract/index.js';
import type { EmulatorContext } from './context.js';
import { isAllowed } from './ip-allow-list.js';
import type { ApiKeyRecord } from './keys.js';
import { sendError } from './replies.js';

export interface AccessRule {
  /** Path used for stats and fault targeting (the route, never the query string). */
  path: string;
  product: Product;
  /** GET /usage answers with its own codes (missing_api_key, api_key_disabled, ...). */
  usageCodes?: boolean;
}

const param = (v: unknown): string | undefined =>
  typeof v === 'string' && v.length > 0 ? v : undefined;

export function credentialsOf(req: FastifyRequest): { key?: string; secret?: string } {
  const q = (req.query ?? {}) as Record<string, unknown>;
  const b = (req.body && typeof req.body === 'object' ? req.body : {}) as Record<string, unknown>;
  const hk = param(req.headers['x-api-key']);
  const hs = param(req.headers['x-api-secret']);
  const key = hk ?? param(q.api_key) ?? param(b.api_key);
  const secret = hs ?? param(q.api_secret) ?? param(b.api_secret);
  return { ...(key ? { key } : {}), ...(secret ? { secret } : {}) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Why a keyed request was refused: an HTTP status and a service error code, or a dropped connection. */
export type Refusal =
  | { kind: 'error'; status: number; code: string; message: string; retryAfterSeconds?: number }
  | { kind: 'drop' };

export type Admission = { ok: true; key: ApiKeyRecord } | { ok: false; refusal: Refusal };

const refuse = (
  status: number,
  code: string,
  message: string,
  retryAfterSeconds?: number,
): Admission => ({
  ok: false,
  refusal: {
    kind: 'error',
    status,
    code,
    message,
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
  },
});

/** The key behind the X-API-Key / X-API-Secret pair (or its parameter fallback). */
export function authenticateKeyPair(
  ctx: EmulatorContext,
  req: FastifyRequest,
  usage = false,
): Admission {
  const { key: k, secret } = credentialsOf(req);
  if (!k || !secret) {
    if (usage) {
      return k
        ? refuse(401, 'missing_api_secret', 'Send the key secret in X-API-Secret.')
        : refuse(401, 'missing_api_key', 'Send the API key in X-API-Key.');
    }
    return refuse(401, 'missing_credentials', 'Send both X-API-Key and X-API-Secret headers.');
  }
  const key = ctx.keys.findByKey(k);
  if (!key) {
    return refuse(
      401,
      usage ? 'invalid_api_key' : 'invalid_credentials',
      'The API key or secret is not valid.',
    );
  }
  if (!ctx.keys.secretMatches(key, secret)) {
    return refuse(
      401,
      usage ? 'invalid_api_secret' : 'invalid_credentials',
      'The API key or secret is not valid.',
    );
  }
  return { ok: true, key };
}

/**
 * The checks on an authenticated key, in order: disabled, expired, the rate limit (counted at
 * arrival), injected faults, the IP allow-list, the subscription and the product.
 */
export async function checkKey(
  ctx: EmulatorContext,
  req: FastifyRequest,
  key: ApiKeyRecord,
  rule: AccessRule,
): Promise<Admission> {
  const usage = rule.usageCodes === true;
  if (key.disabled) {
    if (usage) return refuse(403, 'api_key_disabled', 'This API key is disabled.');
    return refuse(401, 'invalid_credentials', 'The API key or secret is not valid.');
  }
  const now = Date.now();
  if (key.expiresAt !== null && now >= key.expiresAt) {
    return refuse(401, 'api_key_expired', 'This API key has expired.');
  }

  ctx.stats.request(key.id, req.method, rule.path);
  const limits = ctx.opts.limits;
  if (limits.enabled) {
    const d = ctx.limiter.check(
      key.id,
      key.perMinute ?? limits.perMinute,
      key.perHour ?? limits.perHour,
      now,
    );
    if (!d.allowed) {
      ctx.stats.of(key.id).rateLimited++;
      return refuse(
        429,
        'rate_limit_exceeded',
        'Too many requests for this key; retry after the time in Retry-After.',
        d.retryAfterSeconds,
      );
    }
  }

  if (ctx.faults.active) {
    const slow = ctx.faults.slowReplyMs(rule.path);
    if (slow > 0) await sleep(slow);
    const f = ctx.faults.forRequest(rule.path, now);
    if (f.kind === 'drop') return { ok: false, refusal: { kind: 'drop' } };
    if (f.kind === 'unavailable') {
      return refuse(
        503,
        'service_unavailable',
        'The service is temporarily unavailable; retry with back-off.',
      );
    }
    if (f.kind === 'rate_limited') {
      ctx.stats.of(key.id).rateLimited++;
      return refuse(
        429,
        'rate_limit_exceeded',
        'Too many requests; retry after the time in Retry-After.',
        f.retryAfterSeconds,
      );
    }
  }

  if (key.ipLock && !isAllowed(key.allowRules, req.ip)) {
    return refuse(403, 'ip_not_allowed', "The request's address is not in this key's allow-list.");
  }
  if (!key.subscriptionActive) {
    return refuse(403, 'subscription_inactive', 'The subscription behind this key is inactive.');
  }
  if (rule.product !== 'none' && !key.products.has(rule.product)) {
    return refuse(
      403,
      'subscription_required',
      `This key lacks the ${rule.product} product needed by this endpoint.`,
    );
  }
  return { ok: true, key };
}

/** Send a refusal as the HTTP API does: the error envelope, or a closed connection. */
export function sendRefusal(req: FastifyRequest, reply: FastifyReply, refusal: Refusal): void {
  if (refusal.kind === 'drop') {
    reply.hijack();
    req.raw.socket.destroy();
    return;
  }
  sendError(
    reply,
    refusal.status,
    refusal.code,
    refusal.message,
    refusal.retryAfterSeconds !== undefined
      ? { 'retry-after': String(refusal.retryAfterSeconds) }
      : undefined,
  );
}

/** The authenticated key, or undefined when a failure reply has been sent. */
export async function admit(
  ctx: EmulatorContext,
  req: FastifyRequest,
  reply: FastifyReply,
  rule: AccessRule,
): Promise<ApiKeyRecord | undefined> {
  const auth = authenticateKeyPair(ctx, req, rule.usageCodes === true);
  const a = auth.ok ? await checkKey(ctx, req, auth.key, rule) : auth;
  if (a.ok) return a.key;
  sendRefusal(req, reply, a.refusal);
  return undefined;
}
