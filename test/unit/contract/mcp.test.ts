import { describe, expect, it } from 'vitest';
import {
  MCP_PATHS,
  MCP_PROTOCOL_VERSION,
  MCP_RESULT_PATHS,
  MCP_SERVER_VERSION,
  MCP_TOOL_ARGS,
} from '../../../src/contract/mcp.js';

const ok = (tool: keyof typeof MCP_TOOL_ARGS, args: unknown) =>
  MCP_TOOL_ARGS[tool].safeParse(args).success;

describe('MCP endpoint', () => {
  it('versions', () => {
    expect(MCP_SERVER_VERSION).toBe('0.1.0');
    expect(MCP_PROTOCOL_VERSION).toBe('2025-06-18');
  });
  it('lists every MCP path of the interface', () => {
    expect([...MCP_PATHS].sort()).toEqual([
      '/.well-known/mcp',
      '/.well-known/oauth-authorization-server',
      '/.well-known/oauth-protected-resource',
      '/mcp',
      '/mcp/message',
      '/mcp/oauth/authorize',
      '/mcp/oauth/token',
      '/mcp/status',
    ]);
  });
  it('person_search takes the search parameters except type and high_freshness', () => {
    expect(ok('person_search', { query: 'q', limit: 5, insights: true })).toBe(true);
    expect(ok('person_search', { query: 'q', type: 'light' })).toBe(false);
    expect(ok('person_search', { query: 'q', high_freshness: true })).toBe(false);
    expect(ok('person_search', { query: 'q', limit: 101 })).toBe(false);
    expect(ok('person_search', {})).toBe(false);
  });
  it('person_enrichment takes the enrichment parameters except lookup_mode', () => {
    expect(ok('person_enrichment', { email: 'a@example.com', lite_enrich: true })).toBe(true);
    expect(ok('person_enrichment', { email: 'a@example.com', lookup_mode: 'deep' })).toBe(false);
    expect(ok('person_enrichment', {})).toBe(false);
  });
  it('the other tools take their HTTP parameters and nothing else', () => {
    expect(ok('person_newsfeed', { linkedin_url: 'https://x.com/a', limit: 1000 })).toBe(true);
    expect(ok('company_search', { industry: 'i', max_results: 51 })).toBe(false);
    expect(ok('company_enrichment', { domain: 'acme.com', extra: 1 })).toBe(false);
  });
  it('check_status needs request_id and knows the seven endpoints', () => {
    expect(ok('check_status', { request_id: 'r' })).toBe(true);
    expect(ok('check_status', { request_id: 'r', endpoint: 'company_enrichment' })).toBe(true);
    expect(ok('check_status', { request_id: 'r', endpoint: 'person_identify' })).toBe(false);
    expect(ok('check_status', {})).toBe(false);
    expect(ok('check_status', { request_id: 'r', other: 1 })).toBe(false);
  });
  it('completed result locations per tool', () => {
    expect(MCP_RESULT_PATHS).toEqual({
      person_search: 'data.results',
      company_search: 'data.results',
      company_enrichment: 'data.result',
      person_enrichment: 'data',
      person_ask: 'data',
      person_newsfeed: 'data',
      person_lookup_fields: 'data.result',
    });
  });
});
