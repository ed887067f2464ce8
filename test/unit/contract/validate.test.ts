import { describe, expect, it } from 'vitest';
import { getEndpoint } from '../../../src/contract/catalogue.js';
import { canonicalInput } from '../../../src/contract/inputs.js';
import { MCP_TOOL_ARGS } from '../../../src/contract/mcp.js';
import { formatProblems, inputAliases, problemsOf } from '../../../src/contract/validate.js';

describe('formatProblems', () => {
  it('joins field and message, one rule per clause', () => {
    expect(
      formatProblems([
        { field: 'limit', message: 'must be at most 100' },
        { field: '', message: 'needs at least one of: query' },
      ]),
    ).toBe('limit must be at most 100; needs at least one of: query');
    expect(formatProblems([])).toBe('');
  });
});

describe('problemsOf', () => {
  it('a missing required field reads "is required"; a wrong one keeps its message', () => {
    const schema = MCP_TOOL_ARGS.check_status;
    const missing = schema.safeParse({});
    expect(problemsOf(missing.error!, {})).toEqual([
      { field: 'request_id', message: 'is required' },
    ]);
    const wrong = schema.safeParse({ request_id: 5 });
    expect(problemsOf(wrong.error!, { request_id: 5 })[0]?.field).toBe('request_id');
    expect(problemsOf(wrong.error!, { request_id: 5 })[0]?.message).not.toBe('is required');
  });
});

describe('aliases per endpoint', () => {
  it('each endpoint speaks only the aliases it documents', () => {
    expect(inputAliases(getEndpoint('person_search'))).toEqual({ keywords: 'query' });
    expect(inputAliases(getEndpoint('person_enrichment'))).toEqual({
      linkedin_url: 'social_media_url',
    });
    expect(inputAliases(getEndpoint('person_discover'))).toEqual({});
    expect(inputAliases(getEndpoint('usage'))).toEqual({});
  });
  it('canonicalInput renames an alias, keeping an explicit canonical value', () => {
    expect(canonicalInput({ linkedin_url: 'u', email: 'e' })).toEqual({
      social_media_url: 'u',
      email: 'e',
    });
    expect(canonicalInput({ keywords: 'k', query: 'q' })).toEqual({ query: 'q' });
  });
  it("keeps /person/discover's own keywords field with its aliases", () => {
    expect(canonicalInput({ keywords: 'k' }, inputAliases(getEndpoint('person_discover')))).toEqual(
      { keywords: 'k' },
    );
  });
});
