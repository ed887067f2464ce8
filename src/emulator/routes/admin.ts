// Admin endpoints for tests and benchmarks: faults (read, replace), counters per key and resets.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { formatProblems, problemsOf } from '../../contract/index.js';
import type { EmulatorContext } from '../context.js';
import { faultsSchema } from '../options.js';
import { sendData, sendError } from '../replies.js';
import { adminGuard } from './admin-guard.js';

export function registerAdminRoutes(app: FastifyInstance, ctx: EmulatorContext): void {
  const guard = adminGuard(ctx.adminToken);

  app.get('/admin/faults', { preHandler: guard }, async (_req, reply) =>
    sendData(reply, 200, ctx.faults.get()),
  );

  app.put('/admin/faults', { preHandler: guard }, async (req, reply) => {
    const r = faultsSchema.safeParse(req.body ?? {});
    if (!r.success)
      return sendError(
        reply,
        400,
        'invalid_request',
        formatProblems(problemsOf(r.error, req.body ?? {}, faultsSchema)),
      );
    return sendData(reply, 200, ctx.faults.set(r.data));
  });

  app.get('/admin/stats', { preHandler: guard }, async (_req, reply) => {
    ctx.jobs.settleDue();
    return sendData(reply, 200, { keys: ctx.stats.snapshot(), jobs: ctx.jobs.count() });
  });

  app.get<{ Params: { keyId: string } }>(
    '/admin/stats/:keyId',
    { preHandler: guard },
    async (req, reply) => {
      ctx.jobs.settleDue();
      return sendData(reply, 200, structuredClone(ctx.stats.of(req.params.keyId)));
    },
  );

  const resetBody = z.object({ key_id: z.string().min(1).optional() }).strict();
  app.post('/admin/stats/reset', { preHandler: guard }, async (req, reply) => {
    const r = resetBody.safeParse(req.body ?? {});
    if (!r.success)
      return sendError(
        reply,
        400,
        'invalid_request',
        formatProblems(problemsOf(r.error, req.body ?? {}, resetBody)),
      );
    ctx.stats.reset(r.data.key_id);
    return sendData(reply, 200, { reset: true });
  });

  // Everything mutable except keys and faults: jobs, usage, rate windows and counters.
  app.post('/admin/reset', { preHandler: guard }, async (_req, reply) => {
    ctx.jobs.reset();
    ctx.ledger.reset();
    ctx.limiter.reset();
    ctx.stats.reset();
    return sendData(reply, 200, { reset: true });
  });
}
