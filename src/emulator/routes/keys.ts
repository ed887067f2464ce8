// Key management under /v1/api-keys: create (the secret is shown in this reply only), list,
// read, update (products, credits or a top-up, allow-list, expiry, disabled, limits) and delete.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { formatProblems, formatTimestamp, problemsOf } from '../../contract/index.js';
import type { EmulatorContext } from '../context.js';
import { KeySettingsError, keyView, type KeySettings } from '../keys.js';
import { PRODUCTS } from '../options.js';
import { sendData, sendError } from '../replies.js';
import { adminGuard } from './admin-guard.js';

const nullablePositive = z.number().int().positive().nullable().optional();

export const keySettingsSchema = z
  .object({
    name: z.string().min(1).max(100).optional(),
    products: z.array(z.enum(PRODUCTS)).optional(),
    credits: z.number().int().min(0).nullable().optional(),
    add_credits: z.number().int().optional(),
    monthly_allocation: z.number().int().min(0).nullable().optional(),
    ip_lock: z.boolean().optional(),
    ip_allowlist: z.array(z.string().min(1)).optional(),
    expires_at: z.string().nullable().optional(),
    disabled: z.boolean().optional(),
    subscription_active: z.boolean().optional(),
    rate_limits: z
      .object({ per_minute: nullablePositive, per_hour: nullablePositive })
      .strict()
      .optional(),
    restricted_access: z.array(z.string().min(1)).optional(),
  })
  .strict();

export function registerKeyRoutes(app: FastifyInstance, ctx: EmulatorContext): void {
  const guard = adminGuard(ctx.adminToken);
  const view = (id: string) => {
    const rec = ctx.keys.get(id);
    return rec ? keyView(rec, formatTimestamp) : undefined;
  };
  const parse = (
    body: unknown,
  ): { ok: true; value: KeySettings } | { ok: false; message: string } => {
    const r = keySettingsSchema.safeParse(body ?? {});
    return r.success
      ? { ok: true, value: r.data }
      : { ok: false, message: formatProblems(problemsOf(r.error, body ?? {}, keySettingsSchema)) };
  };

  app.post('/v1/api-keys', { preHandler: guard }, async (req, reply) => {
    const p = parse(req.body);
    if (!p.ok) return sendError(reply, 400, 'invalid_request', p.message);
    try {
      const { record, secret } = ctx.keys.create(p.value);
      return sendData(reply, 201, { ...keyView(record, formatTimestamp), secret });
    } catch (e) {
      if (e instanceof KeySettingsError) return sendError(reply, 400, 'invalid_request', e.message);
      throw e;
    }
  });

  app.get('/v1/api-keys', { preHandler: guard }, async (_req, reply) =>
    sendData(reply, 200, { keys: ctx.keys.list().map((k) => keyView(k, formatTimestamp)) }),
  );

  app.get<{ Params: { id: string } }>(
    '/v1/api-keys/:id',
    { preHandler: guard },
    async (req, reply) => {
      const v = view(req.params.id);
      return v
        ? sendData(reply, 200, v)
        : sendError(reply, 404, 'key_not_found', 'No key with this id.');
    },
  );

  const update = async (
    req: { params: { id: string }; body: unknown },
    reply: Parameters<typeof sendData>[0],
  ) => {
    const p = parse(req.body);
    if (!p.ok) return sendError(reply, 400, 'invalid_request', p.message);
    try {
      const rec = ctx.keys.update(req.params.id, p.value);
      if (!rec) return sendError(reply, 404, 'key_not_found', 'No key with this id.');
      return sendData(reply, 200, keyView(rec, formatTimestamp));
    } catch (e) {
      if (e instanceof KeySettingsError) return sendError(reply, 400, 'invalid_request', e.message);
      throw e;
    }
  };
  app.patch<{ Params: { id: string } }>('/v1/api-keys/:id', { preHandler: guard }, update);
  app.put<{ Params: { id: string } }>('/v1/api-keys/:id', { preHandler: guard }, update);

  app.delete<{ Params: { id: string } }>(
    '/v1/api-keys/:id',
    { preHandler: guard },
    async (req, reply) => {
      if (!ctx.keys.delete(req.params.id))
        return sendError(reply, 404, 'key_not_found', 'No key with this id.');
      ctx.limiter.reset(req.params.id);
      return sendData(reply, 200, { id: req.params.id, deleted: true });
    },
  );
}
