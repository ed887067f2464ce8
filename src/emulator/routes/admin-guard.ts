// The admin token guard of /v1/api-keys and /admin (header X-Admin-Token), compared in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from '../replies.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

export function adminGuard(adminToken: string) {
  const expected = digest(adminToken);
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const given = req.headers['x-admin-token'];
    if (typeof given !== 'string' || given === '') {
      return sendError(reply, 401, 'missing_admin_token', 'Send the admin token in X-Admin-Token.');
    }
    if (!timingSafeEqual(digest(given), expected)) {
      return sendError(reply, 401, 'invalid_admin_token', 'The admin token is not valid.');
    }
  };
}
