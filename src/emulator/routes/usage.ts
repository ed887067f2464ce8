// GET /usage: synchronous and free. The period rules (month 1-12, year 2020-2030, no future
// period) come from the contract, so the emulator answers the codes the client expects.
import type { FastifyInstance } from 'fastify';
import { checkUsagePeriod } from '../../contract/index.js';
import { admit } from '../access.js';
import type { EmulatorContext } from '../context.js';
import { sendData, sendError } from '../replies.js';

export function registerUsageRoute(app: FastifyInstance, ctx: EmulatorContext): void {
  app.get('/usage', async (req, reply) => {
    const key = await admit(ctx, req, reply, { path: '/usage', product: 'none', usageCodes: true });
    if (!key) return reply;
    const q = req.query as Record<string, unknown>;
    const period = checkUsagePeriod({ month: q.month, year: q.year }, new Date());
    if (!period.ok) return sendError(reply, 400, period.code, period.message);
    // Charges of jobs that completed a moment ago are booked before reading.
    ctx.jobs.settleDue();
    return sendData(reply, 200, ctx.ledger.usage(key, period.year, period.month));
  });
}
