import { describe, expect, it } from 'vitest';
import {
  ASYNC_ENDPOINTS,
  ENDPOINTS,
  endpointByMcpTool,
  findEndpoint,
  getEndpoint,
} from '../../../src/contract/catalogue.js';

// Every HTTP API path the interface names (the MCP routes are in mcp.test.ts), with its result path.
const SPEC_PATHS: Record<string, string> = {
  '/person/search': 'data.results',
  '/person/enrichment': 'data.result',
  '/person/enrich': 'data.result',
  '/person/lookup-fields': 'data.result',
  '/person/newsfeed': 'data.result.newsfeed',
  '/person/ask': 'data.result',
  '/company/search': 'data.results',
  '/company/enrichment': 'data.result',
  '/person/identify': 'data.result',
  '/person/newsfeed-lookup': 'data.result.newsfeed',
  '/person/connection-mapping': 'data.result',
  '/person/events': 'data.result',
  '/person/social-profiles': 'data.result',
  '/person/interests': 'data.result',
  '/person/interactions': 'data.result',
  '/person/articlesearch': 'data.results',
  '/person/deep-research': 'data.result',
  '/person/discovery': 'data.results',
  '/person/discover': 'data.results',
  '/person/leads': 'data.results',
  '/person/ask-lookup': 'data.result',
  '/person/simulation': 'data.result',
  '/person/single-social-lookup': 'data.result',
  '/person/competitor-engagements': 'data.results',
  '/company/needs': 'data.result',
  '/company/checkseller': 'data.result',
  '/company/checkfeature': 'data.result',
  '/company/funding': 'data.result',
  '/company/funders': 'data.result',
  '/company/discovery': 'data.results',
  // Additional paths: result shapes not shown; data.result is assumed.
  '/person/osint': 'data.result',
  '/person/email': 'data.result',
  '/person/phone': 'data.result',
  '/person/social-lookup': 'data.result',
  '/person/social-account-validator': 'data.result',
  '/company/employees': 'data.result',
  '/company/intent': 'data.result',
  '/company/competitor-engagements': 'data.result',
  '/person/enrichment/feedback': 'data',
  '/usage': 'data',
};

describe('endpoint catalogue', () => {
  it('has exactly one entry per path of the interface', () => {
    expect(ENDPOINTS).toHaveLength(40);
    expect(ENDPOINTS.map((e) => e.path).sort()).toEqual(Object.keys(SPEC_PATHS).sort());
  });
  it.each(Object.entries(SPEC_PATHS))('%s reads its result at %s', (path, resultPath) => {
    expect(getEndpoint(path).resultPath).toBe(resultPath);
  });
  it('names are unique snake_case', () => {
    const names = ENDPOINTS.map((e) => e.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });
  it('only person search follows the person-search polling contract', () => {
    expect(ENDPOINTS.filter((e) => e.polling === 'person_search').map((e) => e.name)).toEqual([
      'person_search',
    ]);
  });
  it('feedback and usage are synchronous and free; everything else is an async POST', () => {
    expect(
      ENDPOINTS.filter((e) => e.polling === 'sync').map((e) => [e.name, e.method, e.price]),
    ).toEqual([
      ['person_enrichment_feedback', 'POST', 'free'],
      ['usage', 'GET', 'free'],
    ]);
    expect(ASYNC_ENDPOINTS).toHaveLength(38);
    for (const e of ASYNC_ENDPOINTS) expect(e.method).toBe('POST');
  });
  it('only /person/osint is restricted', () => {
    expect(ENDPOINTS.filter((e) => e.restricted).map((e) => e.path)).toEqual(['/person/osint']);
  });
  it('the higher enrichment tier is priced above enrichment', () => {
    expect(getEndpoint('/person/enrich').price).toBe('premium_enrichment');
    expect(getEndpoint('/person/enrichment').price).toBe('enrichment');
  });
  it('MCP tools map to their endpoints with the products the interface states', () => {
    const tools: [string, string, string][] = [
      ['person_search', '/person/search', 'search'],
      ['person_enrichment', '/person/enrichment', 'enrichment'],
      ['person_newsfeed', '/person/newsfeed', 'enrichment'],
      ['person_ask', '/person/ask', 'enrichment'],
      ['company_search', '/company/search', 'search'],
      ['company_enrichment', '/company/enrichment', 'enrichment'],
    ];
    for (const [tool, path, product] of tools) {
      const e = endpointByMcpTool(tool);
      expect(e?.path).toBe(path);
      expect(e?.mcpProduct ?? e?.product).toBe(product);
    }
    expect(endpointByMcpTool('person_lookup_fields')?.path).toBe('/person/lookup-fields');
    expect(endpointByMcpTool('check_status')).toBeUndefined();
  });
  it('looks endpoints up by name, path or dashed name', () => {
    expect(findEndpoint('person_lookup_fields')?.path).toBe('/person/lookup-fields');
    expect(findEndpoint('/person/lookup-fields')?.name).toBe('person_lookup_fields');
    expect(findEndpoint('person-lookup-fields')?.name).toBe('person_lookup_fields');
    expect(findEndpoint(' usage ')?.path).toBe('/usage');
    expect(findEndpoint('nope')).toBeUndefined();
    expect(() => getEndpoint('nope')).toThrow(/unknown endpoint "nope"/);
  });
});
