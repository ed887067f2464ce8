// Durable calls over the MCP transport (the tool call submits, check_status polls) against the
// real dev server and the emulator's MCP endpoint over real HTTP, compared with the HTTP API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PcdsUsageError } from '../../src/client.js';
import { sampleRows } from '../../src/emulator/index.js';
import { unthrottled, type PermitGate } from '../../src/throttle/permits.js';
import {
  startCallEnv,
  TEST_KEYS,
  withCallWorker,
  type CallEnv,
  callFailureOf,
} from './call-env.js';
import { decodedHistory } from '../harness/temporal.js';

let env: CallEnv;
const knownEmail = sampleRows({ rows: 1 })[0].email;
const ENRICH = 'POST /person/enrichment';
const MCP = 'POST /mcp';

beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

const mcpRequests = () => env.emulator.stats(env.emulator.devKey.id).requests[MCP] ?? 0;

describe('calls over the MCP transport', () => {
  it('give the same outcome as over HTTP, through tool calls and check_status only', async () => {
    await withCallWorker(env, async (client) => {
      const overHttp = await client.call('person_enrichment', { email: knownEmail });
      const httpSubmits = env.proxy.seen(ENRICH).length;
      const httpPolls = env.proxy.seen('GET /person/enrichment').length;
      const toolCallsBefore = mcpRequests();
      const handle = await client.startCall(
        'person_enrichment',
        { email: knownEmail },
        { transport: 'mcp' },
      );
      const overMcp = await handle.result();
      expect(overMcp.outcome).toBe('found');
      const { requestId: _a, timing: _b, ...sameHttp } = overHttp;
      const { requestId: _c, timing: _d, ...sameMcp } = overMcp;
      expect(sameMcp).toEqual(sameHttp);
      // No HTTP submit or poll went out; the emulator counted the tool call and the checks.
      expect(env.proxy.seen(ENRICH)).toHaveLength(httpSubmits);
      expect(env.proxy.seen('GET /person/enrichment')).toHaveLength(httpPolls);
      expect(mcpRequests() - toolCallsBefore).toBeGreaterThanOrEqual(2);
      // The choice is durable: it is in the workflow's input.
      const history = await decodedHistory(await handle.workflow.fetchHistory());
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      const input = JSON.parse(
        Buffer.from(started!.input!.payloads![0].data!).toString('utf8'),
      ) as Record<string, unknown>;
      expect(input.transport).toBe('mcp');
    });
  });

  it('takes one throttle permit per tool call and per check_status, like HTTP requests', async () => {
    const permits: string[] = [];
    const counting: PermitGate = {
      ...unthrottled,
      acquire: (keyId, kind, options) => {
        permits.push(kind);
        return unthrottled.acquire(keyId, kind, options);
      },
    };
    await withCallWorker(
      env,
      async (client) => {
        const before = mcpRequests();
        await client.call('person_enrichment', { email: knownEmail }, { transport: 'mcp' });
        // Every tools/call the emulator admitted (the tool and each check_status) had a permit.
        expect(permits.length).toBe(mcpRequests() - before);
        expect(permits.filter((k) => k === 'submit')).toHaveLength(1);
        expect(permits.filter((k) => k === 'poll').length).toBeGreaterThanOrEqual(1);
      },
      counting,
    );
  });

  it('gives an empty outcome for no match, like HTTP', async () => {
    await withCallWorker(env, async (client) => {
      const params = { email: 'nobody.at.all.zz9@nowhere-known.org' };
      const overHttp = await client.call('person_enrichment', params);
      const overMcp = await client.call('person_enrichment', params, { transport: 'mcp' });
      expect(overMcp.outcome).toBe(overHttp.outcome);
      expect(overMcp).toMatchObject({ outcome: 'empty' });
    });
  });

  it.each([
    ['invalid_credentials', TEST_KEYS.wrongSecret.id],
    ['subscription_required', TEST_KEYS.searchOnly.id],
    ['insufficient_credits', TEST_KEYS.broke.id],
  ])('fails with %s as over HTTP, without repeating the tool call', async (code, keyId) => {
    await withCallWorker(env, async (client) => {
      const before = env.proxy.seen(MCP).filter((s) => s.answered !== 202).length;
      const err = await callFailureOf(
        client.call('person_enrichment', { email: knownEmail }, { keyId, transport: 'mcp' }),
      );
      expect(err.code).toBe(code);
      // initialize (first use of this key's session) and the one tools/call, nothing more.
      const after = env.proxy.seen(MCP).filter((s) => s.answered !== 202).length;
      expect(after - before).toBeLessThanOrEqual(2);
      expect(env.emulator.stats(keyId).jobsSubmitted).toBe(0);
    });
  });

  it('waits out a 429 of the MCP endpoint and then succeeds', async () => {
    await withCallWorker(env, async (client) => {
      // Warm the session up, so the scripted reply meets the tools/call.
      await client.call('person_enrichment', { email: knownEmail }, { transport: 'mcp' });
      env.proxy.script(MCP, [{ status: 429, code: 'rate_limit_exceeded', retryAfterSeconds: 1 }]);
      const from = env.proxy.seen(MCP).length;
      const out = await client.call(
        'person_enrichment',
        { email: knownEmail },
        { transport: 'mcp' },
      );
      expect(out.outcome).toBe('found');
      const seen = env.proxy.seen(MCP).slice(from);
      expect(seen[0].answered).toBe(429);
      expect(seen[1].at - seen[0].at).toBeGreaterThanOrEqual(900);
    });
  });

  it('ends a tools/call whose reply was lost as submit_outcome_unknown, never sent again', async () => {
    await withCallWorker(env, async (client) => {
      await client.call('person_enrichment', { email: knownEmail }, { transport: 'mcp' });
      env.proxy.script(MCP, [{ drop: true }]);
      const from = env.proxy.seen(MCP).length;
      const err = await callFailureOf(
        client.call('person_enrichment', { email: knownEmail }, { transport: 'mcp' }),
      );
      expect(err.code).toBe('submit_outcome_unknown');
      const after = env.proxy.seen(MCP).slice(from);
      expect(after).toHaveLength(1);
      expect(after[0].answered).toBe('dropped');
    });
  });

  it('refuses an endpoint without an MCP tool, naming it, before anything starts', async () => {
    await withCallWorker(env, async (client) => {
      const err = await client
        .startCall('person_enrich', { email: knownEmail }, { transport: 'mcp' })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PcdsUsageError);
      expect((err as PcdsUsageError).code).toBe('mcp_unsupported');
      expect((err as Error).message).toMatch(/person_enrich has no MCP tool/);
      const noWebhook = await client
        .startCall('person_enrichment', { email: knownEmail }, { transport: 'mcp', webhook: true })
        .catch((e: unknown) => e);
      expect((noWebhook as PcdsUsageError).code).toBe('mcp_unsupported');
    });
  });
});
