// GET /usage read outside an activity: one permit per request from the gate, a 429 reported to
// the throttle before the next permit is asked, other failures passed on. No server.
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../../src/http/errors.js';
import { interactiveRequester } from '../../../src/contract/index.js';

const requester = interactiveRequester();
import type { PermitGate } from '../../../src/throttle/permits.js';
import type { ServiceClients } from '../../../src/http/service-clients.js';
import { readUsage } from '../../../src/http/usage-read.js';

function fakes(replies: (() => Record<string, unknown>)[]) {
  const log: string[] = [];
  const permits: PermitGate = {
    acquire: async (keyId, kind) => void log.push(`permit ${keyId} ${kind}`),
    rateLimited: async (keyId, ms) => void log.push(`429 ${keyId} ${ms}`),
    creditsExhausted: async () => undefined,
    resetCredits: async () => undefined,
  };
  const clients = {
    resolveKeyId: (id?: string) => id ?? 'first',
    get: (id?: string) => ({
      usage: async (query?: unknown) => {
        log.push(`GET /usage ${id} ${JSON.stringify(query ?? {})}`);
        const reply = replies.shift();
        if (!reply) throw new Error('no more replies');
        return reply();
      },
    }),
  } as unknown as ServiceClients;
  return { log, permits, clients };
}

const rateLimited = () => {
  throw new ServiceError('rate_limit_exceeded', 429, 'throttled', 2_000);
};

describe('readUsage', () => {
  it('takes a usage permit for the resolved key before the request', async () => {
    const { log, permits, clients } = fakes([() => ({ period: '2026-11' })]);
    expect(await readUsage(clients, permits, { requester, query: { month: 11 } })).toEqual({
      period: '2026-11',
    });
    expect(log).toEqual(['permit first usage', 'GET /usage first {"month":11}']);
  });

  it('reports a 429 to the throttle and asks a new permit before trying again', async () => {
    const { log, permits, clients } = fakes([rateLimited, () => ({ period: '2026-11' })]);
    await readUsage(clients, permits, { requester, keyId: 'k2' });
    expect(log).toEqual([
      'permit k2 usage',
      'GET /usage k2 {}',
      '429 k2 2000',
      'permit k2 usage',
      'GET /usage k2 {}',
    ]);
  });

  it('gives up after three 429s, each reported; other failures are passed on at once', async () => {
    const many = fakes([rateLimited, rateLimited, rateLimited, () => ({})]);
    await expect(readUsage(many.clients, many.permits, { requester })).rejects.toMatchObject({
      httpStatus: 429,
    });
    expect(many.log.filter((l) => l.startsWith('429'))).toHaveLength(3);
    const denied = fakes([
      () => {
        throw new ServiceError('invalid_api_secret', 401, 'secret wrong');
      },
    ]);
    await expect(readUsage(denied.clients, denied.permits, { requester })).rejects.toMatchObject({
      code: 'invalid_api_secret',
    });
    expect(denied.log).toEqual(['permit first usage', 'GET /usage first {}']);
  });
});
