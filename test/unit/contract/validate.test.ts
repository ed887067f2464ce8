import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { getEndpoint } from '../../../src/contract/catalogue.js';
import { canonicalInput } from '../../../src/contract/inputs.js';
import { MCP_TOOL_ARGS } from '../../../src/contract/mcp.js';
import {
  formatProblems,
  inputAliases,
  knownPathOf,
  problemsOf,
  validateInput,
} from '../../../src/contract/validate.js';

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
    expect(problemsOf(missing.error!, {}, schema)).toEqual([
      { field: 'request_id', message: 'is required' },
    ]);
    const wrong = schema.safeParse({ request_id: 5 });
    expect(problemsOf(wrong.error!, { request_id: 5 }, schema)[0]?.field).toBe('request_id');
    expect(problemsOf(wrong.error!, { request_id: 5 }, schema)[0]?.message).not.toBe('is required');
  });
});

describe('problems quote nothing of the input', () => {
  const secret = 'jane.doe@secret.com';

  it('counts unknown keys instead of naming them, unless they are parameter names of the catalogue', () => {
    const one = validateInput(getEndpoint('person_search'), { query: 'x', [secret]: 1 });
    expect(one).toEqual({
      ok: false,
      problems: [{ field: '', message: '1 key is not a parameter of this endpoint' }],
    });
    const two = validateInput(getEndpoint('person_enrichment'), {
      email: 'a@example.com',
      [secret]: 1,
      'john@example.org': 2,
    });
    expect(two.ok || formatProblems(two.problems)).toBe(
      '2 keys are not parameters of this endpoint',
    );
    const mixed = validateInput(getEndpoint('person_search'), {
      query: 'x',
      lookup_mode: 'fast',
      [secret]: 1,
    });
    expect(mixed.ok || formatProblems(mixed.problems)).toBe(
      'lookup_mode is not a parameter of this endpoint; 1 other key is not a parameter of this endpoint',
    );
  });

  it('keeps the path segments the schema names and drops a key that came from the input', () => {
    const schema = z
      .object({
        filters: z.record(z.string(), z.object({ min: z.number() })).optional(),
        tags: z.array(z.string()),
        inner: z.object({ size: z.number() }).strict(),
      })
      .strict();
    const input = {
      filters: { [secret]: { min: 'x' } },
      tags: ['a', 5],
      inner: { size: 1, [secret]: 1 },
    };
    const problems = problemsOf(schema.safeParse(input).error!, input, schema);
    expect(problems.map((p) => p.field)).toEqual(['filters', 'tags.1', 'inner']);
    expect(problems[2].message).toBe('has 1 unknown key');
    expect(JSON.stringify(problems)).not.toMatch(/jane|secret/);
    expect(knownPathOf(schema, ['filters', secret, 'min'])).toEqual(['filters']);
    expect(knownPathOf(schema.optional(), ['inner', 'size'])).toEqual(['inner', 'size']);
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
