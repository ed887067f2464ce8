import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUEST_ID_RE, endpointByMcpTool } from '../../src/contract/index.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { client, newKey, sleep, start } from './helpers.js';
import { knownSubjects, mcp } from './mcp-helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  // Jobs take about 1 s: long enough to see them pending on a busy machine.
  em = await start({ latency: { queuedMs: 30_000, processingMs: 70_000 } });
});
afterAll(() => em.stop());

function inputs() {
  const { email, linkedin, company } = knownSubjects(em);
  return {
    person_search: { query: 'engineer', limit: 5 },
    person_enrichment: { email },
    person_lookup_fields: { email, fields: ['displayname', 'current_title'] },
    person_newsfeed: { social_media_url: linkedin, limit: 3 },
    person_ask: { question: 'Where does this person work?', email },
    company_search: { industry: company.industry, max_results: 5 },
    company_enrichment: { domain: company.domain },
  } as const;
}

/** Where each tool's completed result sits in check_status `data`, read from the HTTP poll's data. */
const expectedData: Record<string, (http: any) => unknown> = {
  person_search: (d) => expect.objectContaining({ results: d.results }),
  company_search: (d) => ({ results: d.results }),
  company_enrichment: (d) => ({ result: d.result }),
  person_lookup_fields: (d) => ({ result: d.result }),
  person_enrichment: (d) => d.result,
  person_ask: (d) => d.result,
  person_newsfeed: (d) => d.result,
};

describe('MCP tools', () => {
  it('rule: tools/call answers a text content item whose JSON is request_id, status pending, endpoint and next_action check_status', async () => {
    const r = await mcp(em).call('person_enrichment', inputs().person_enrichment);
    expect(r.status).toBe(200);
    expect(r.body.result.content).toHaveLength(1);
    expect(r.body.result.content[0].type).toBe('text');
    expect(r.doc).toEqual({
      request_id: expect.stringMatching(REQUEST_ID_RE),
      status: 'pending',
      endpoint: 'person_enrichment',
      next_action: {
        tool: 'check_status',
        args: { request_id: r.doc.request_id, endpoint: 'person_enrichment' },
      },
    });
  });

  it('rule: check_status is pending with a message while the job runs, then complete with the result at the documented place for each of the seven tools', async () => {
    const c = mcp(em);
    const http = client(em);
    await Promise.all(
      Object.entries(inputs()).map(async ([tool, args]) => {
        const started = await c.call(tool, args);
        expect(started.doc?.status, tool).toBe('pending');
        const first = await c.call('check_status', started.doc.next_action.args);
        expect(first.doc, tool).toEqual({
          status: 'pending',
          request_id: started.doc.request_id,
          endpoint: tool,
          message: expect.any(String),
        });
        const done = await c.waitStatus(started.doc.next_action.args);
        expect(done.body.result.isError, tool).toBe(false);
        expect(done.doc, tool).toMatchObject({
          status: 'complete',
          endpoint: tool,
          request_id: started.doc.request_id,
        });
        // The same job read through the HTTP API: its payload relocated as documented.
        const path = endpointByMcpTool(tool)!.path;
        const page = tool === 'person_search' ? '&offset=0&limit=5' : '';
        const polled = await http.get(`${path}?request_id=${started.doc.request_id}${page}`);
        expect(polled.status, tool).toBe(200);
        expect(done.doc.data, tool).toEqual(expectedData[tool](polled.body.data));
        expect(JSON.stringify(done.doc.data), tool).not.toBe('{}');
      }),
    );
    const c2 = mcp(em);
    const enrichment = await c2.call('person_enrichment', inputs().person_enrichment);
    const profile = (await c2.waitStatus(enrichment.doc.next_action.args)).doc.data;
    expect(profile.best_business_email).toBe(inputs().person_enrichment.email);
    expect(profile).not.toHaveProperty('result');
  });

  it('rule: person_newsfeed of a profile that is not found ends in status error with a message', async () => {
    const c = mcp(em);
    const r = await c.call('person_newsfeed', {
      social_media_url: 'https://www.linkedin.com/in/nobody-at-all-424242',
    });
    const done = await c.waitStatus(r.doc.next_action.args);
    expect(done.doc).toMatchObject({ status: 'error', request_id: r.doc.request_id });
    expect(typeof done.doc.message).toBe('string');
    expect(done.doc).not.toHaveProperty('data');
    expect(done.body.result.isError).toBe(true);
  });

  it('rule: MCP tools charge credits like their HTTP counterparts (same /usage totals and stats)', async () => {
    const viaMcp = await newKey(em);
    const viaHttp = await newKey(em);
    const { email } = knownSubjects(em);
    const calls = [
      ['person_enrichment', '/person/enrichment', { email }],
      ['person_search', '/person/search', { query: 'engineer', show_emails: true, insights: true }],
    ] as const;
    const m = mcp(em, viaMcp);
    const h = client(em, viaHttp);
    for (const [tool, path, args] of calls) {
      const started = await m.call(tool, args);
      expect((await m.waitStatus(started.doc.next_action.args)).doc.status).toBe('complete');
      const ack = await h.post(path, args);
      expect((await h.waitDone(path, ack.body.data.request_id)).status).toBe(200);
    }
    const usageMcp = (await client(em, viaMcp).get('/usage')).body.data;
    const usageHttp = (await h.get('/usage')).body.data;
    expect(usageMcp.credits_used.total).toBeGreaterThan(0);
    expect(usageMcp.credits_used).toEqual(usageHttp.credits_used);
    expect(usageMcp.requests_count).toEqual(usageHttp.requests_count);
    expect(usageMcp.limits.available_credits).toBe(usageHttp.limits.available_credits);
    expect(em.stats(viaMcp.id).creditsCharged).toBe(em.stats(viaHttp.id).creditsCharged);
  });

  it('rule: product access follows the MCP column (person_newsfeed needs enrichment over MCP, newsfeed over HTTP; searches need search)', async () => {
    const { linkedin } = knownSubjects(em);
    const enrichmentOnly = await newKey(em, { products: ['enrichment'] });
    const newsfeedAndSearch = await newKey(em, { products: ['newsfeed', 'search'] });
    const feed = { social_media_url: linkedin };

    const granted = await mcp(em, enrichmentOnly).call('person_newsfeed', feed);
    expect(granted.doc?.status).toBe('pending');
    const httpRefused = await client(em, enrichmentOnly).post('/person/newsfeed', feed);
    expect(httpRefused.status).toBe(403);
    expect(httpRefused.body.error.code).toBe('subscription_required');

    const mcpRefused = await mcp(em, newsfeedAndSearch).call('person_newsfeed', feed);
    expect(mcpRefused.body.error.code).toBe(-32003);
    expect(mcpRefused.body.error.data.code).toBe('subscription_required');
    expect((await client(em, newsfeedAndSearch).post('/person/newsfeed', feed)).status).toBe(202);

    const search = await mcp(em, enrichmentOnly).call('person_search', { query: 'engineer' });
    expect(search.body.error.data.code).toBe('subscription_required');
    const company = await mcp(em, enrichmentOnly).call('company_search', { industry: 'x' });
    expect(company.body.error.data.code).toBe('subscription_required');
  });

  it("rule: another key's request_id is refused by check_status and GET /mcp/status", async () => {
    const other = await newKey(em);
    const started = await mcp(em).call('person_enrichment', inputs().person_enrichment);
    const theirs = await mcp(em, other).call('check_status', started.doc.next_action.args);
    expect(theirs.body.result.isError).toBe(true);
    expect(theirs.doc).toMatchObject({ status: 'error', code: 'request_not_found' });
    expect(JSON.stringify(theirs.doc)).not.toContain('best_business_email');
    const legacy = await fetch(`${em.url}/mcp/status?request_id=${started.doc.request_id}`, {
      headers: { 'x-api-key': other.key, 'x-api-secret': other.secret },
    });
    expect(legacy.status).toBe(404);
    expect(((await legacy.json()) as any).status).toBe('error');
    // The owner still reads it; naming another tool is refused too.
    const wrongTool = await mcp(em).call('check_status', {
      request_id: started.doc.request_id,
      endpoint: 'person_ask',
    });
    expect(wrongTool.doc.code).toBe('request_not_found');
  });

  it('rule: the legacy GET /mcp/status reports pending, then completed for the terminal success', async () => {
    const started = await mcp(em).call('company_enrichment', inputs().company_enrichment);
    const url = `${em.url}/mcp/status?request_id=${started.doc.request_id}`;
    const headers = { 'x-api-key': em.devKey.key, 'x-api-secret': em.devKey.secret };
    const first = (await (await fetch(url, { headers })).json()) as any;
    expect(first.status).toBe('pending');
    let body: any;
    for (let i = 0; i < 500; i++) {
      const res = await fetch(url, { headers });
      expect(res.status).toBe(200);
      body = await res.json();
      if (body.status !== 'pending') break;
      await sleep(10);
    }
    expect(body.status).toBe('completed');
    expect(body.endpoint).toBe('company_enrichment');
    expect(body.data.result.domain).toBe(inputs().company_enrichment.domain);
  });

  it('rule: MCP calls count toward the rate limit (then a -32029 error with the wait)', async () => {
    const limited = await start({ limits: { enabled: true, perMinute: 3, perHour: 100 } });
    try {
      const c = mcp(limited);
      for (let i = 0; i < 3; i++) {
        const r = await c.call('check_status', { request_id: `abc_1_${i}` });
        expect(r.body.result, `call ${i}`).toBeDefined();
      }
      const over = await c.call('person_search', { query: 'engineer' });
      expect(over.body.error.code).toBe(-32029);
      expect(over.body.error.data).toMatchObject({ code: 'rate_limit_exceeded' });
      expect(over.body.error.data.retry_after_seconds).toBeGreaterThanOrEqual(1);
      expect(limited.stats().jobsSubmitted).toBe(0);
    } finally {
      await limited.stop();
    }
  });
});
