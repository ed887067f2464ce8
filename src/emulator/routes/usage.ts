// GET /usage: synchronous and free. Month 1-12 and year 2020-2030 default to the current period;
// a period after the current one is invalid_date.
import type { FastifyInstance } from 'fastify';
import { admit } from '../access';
import type { EmulatorContext } from '../context';
import { sendData, sendError } from '../replies';

export function registerUsageRoute(app: FastifyInstance, ctx: EmulatorContext): void {
  app.get('/usage', async (req, reply) => {
    const key = await admit(ctx, req, reply, { path: '/usage', product: 'none', usageCodes: true });
    if (!key) return reply;
    const q = req.query as Record<string, unknown>;
    const now = new Date();
    let month = now.getUTCMonth() + 1;
    let year = now.getUTCFullYear();
    if (q.month !== undefined) {
      const m = typeof q.month === 'string' && /^\d{1,2}$/.test(q.month) ? Number(q.month) : NaN;
      if (!(m >= 1 && m <= 12)) return sendError(reply, 400, 'invalid_month', 'month must be an integer from 1 to 12');
      month = m;
    }
    if (q.year !== undefined) {
      const y = typeof q.year === 'string' && /^\d{4}$/.test(q.year) ? Number(q.year) : NaN;
      if (!(y >= 2020 && y <= 2030)) return sendError(reply, 400, 'invalid_year', 'year must be an integer from 2020 to 2030');
      year = y;
    }
    if (year * 12 + month > now.getUTCFullYear() * 12 + now.getUTCMonth() + 1) {
      return sendError(reply, 400, 'invalid_date', 'The period is in the future.');
    }
    // Charges of jobs that completed a moment ago are booked before reading.
    ctx.jobs.settleDue();
    return sendData(reply, 200, ctx.ledger.usage(key, year, month));
  });
}
