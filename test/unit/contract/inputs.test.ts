import { describe, expect, it } from 'vitest';
import { accepts, fieldsOf, problems } from './helpers.js';

const URL_ = 'https://www.linkedin.com/in/someone';

// [endpoint, minimal valid input, field, value, accepted]
type Case = [string, Record<string, unknown>, string, unknown, boolean];

const SEARCH = { query: 'engineers in Berlin' };
const ENRICH = { email: 'a@example.com' };
const NEWSFEED = { social_media_url: URL_ };
const ASK = { question: 'What does she do?', email: 'a@example.com' };
const CSEARCH = { industry: 'software' };

const BOUNDS: Case[] = [
  // person search
  ['person_search', SEARCH, 'limit', 1, true],
  ['person_search', SEARCH, 'limit', 100, true],
  ['person_search', SEARCH, 'limit', 0, false],
  ['person_search', SEARCH, 'limit', 101, false],
  ['person_search', SEARCH, 'limit', 10.5, false],
  ['person_search', SEARCH, 'limit', '10', false],
  ['person_search', SEARCH, 'offset', 0, true],
  ['person_search', SEARCH, 'offset', 999, true],
  ['person_search', SEARCH, 'offset', -1, false],
  ['person_search', SEARCH, 'offset', 1000, false],
  ['person_search', SEARCH, 'offset', '0', false],
  ['person_search', SEARCH, 'page', 1, true],
  ['person_search', SEARCH, 'page', 100, true],
  ['person_search', SEARCH, 'page', 0, false],
  ['person_search', SEARCH, 'page', 101, false],
  ['person_search', SEARCH, 'page', 'one', false],
  ['person_search', SEARCH, 'type', 'light', true],
  ['person_search', SEARCH, 'type', 'medium', true],
  ['person_search', SEARCH, 'type', 'premium', true],
  ['person_search', SEARCH, 'type', 'basic', false],
  ['person_search', SEARCH, 'type', 'Light', false],
  ['person_search', SEARCH, 'newsfeed', 'all', true],
  [
    'person_search',
    SEARCH,
    'newsfeed',
    ['linkedin', 'twitter', 'instagram', 'github', 'facebook'],
    true,
  ],
  ['person_search', SEARCH, 'newsfeed', ['myspace'], false],
  ['person_search', SEARCH, 'newsfeed', [], false],
  ['person_search', SEARCH, 'newsfeed', 'linkedin', false],
  ['person_search', SEARCH, 'custom_filters', { titles: ['CTO'] }, true],
  ['person_search', SEARCH, 'custom_filters', ['CTO'], false],
  ['person_search', SEARCH, 'exclude', { companies: ['Acme'] }, true],
  ['person_search', SEARCH, 'exclude', 'Acme', false],
  ['person_search', SEARCH, 'docid_whitelist', ['p1', 'p2'], true],
  ['person_search', SEARCH, 'docid_whitelist', 'p1', false],
  ['person_search', SEARCH, 'cursor', 'c1', true],
  ['person_search', SEARCH, 'cursor', 7, false],
  ['person_search', SEARCH, 'person_name', 'Ada', true],
  ['person_search', SEARCH, 'college', 5, false],
  ...(
    [
      'exact_match',
      'force_new',
      'show_emails',
      'show_phone_numbers',
      'require_emails',
      'require_phone_numbers',
      'require_phones_or_emails',
      'enrich_results',
      'profile_scoring',
      'insights',
      'high_freshness',
    ] as const
  ).flatMap((f): Case[] => [
    ['person_search', SEARCH, f, true, true],
    ['person_search', SEARCH, f, 'true', false],
  ]),
  ['person_search', SEARCH, 'callback_url', 'https://hooks.example.com/x', true],
  [
    'person_search',
    SEARCH,
    'callback_url',
    'https://h.example.com/' + 'a'.repeat(1025 - 22),
    false,
  ],
  // Another endpoint's parameter is named; any other unknown key is counted (see validate).
  ['person_search', SEARCH, 'lookup_mode', 'fast', false],
  // person enrichment
  ['person_enrichment', ENRICH, 'lookup_mode', 'fast', true],
  ['person_enrichment', ENRICH, 'lookup_mode', 'balanced', true],
  ['person_enrichment', ENRICH, 'lookup_mode', 'deep', true],
  ['person_enrichment', ENRICH, 'lookup_mode', 'deeper', false],
  ['person_enrichment', { phone: '+1 555 0100' }, 'email', 'not-an-email', false],
  ['person_enrichment', ENRICH, 'social_media_url', 'not a url', false],
  ['person_enrichment', ENRICH, 'linkedin_url', 'not a url', false],
  ['person_enrichment', ENRICH, 'newsfeed', ['github'], true],
  ['person_enrichment', ENRICH, 'newsfeed', ['orkut'], false],
  ['person_enrichment', ENRICH, 'required_fields', ['headline'], true],
  ['person_enrichment', ENRICH, 'required_fields', 'headline', false],
  ['person_enrichment', ENRICH, 'company', 'Acme', true],
  ['person_enrichment', ENRICH, 'city', 'Paris', true],
  ...(
    [
      'force_organization_refresh',
      'lite_enrich',
      'strict_email_check',
      'probability_score',
      'ai_enhanced_search',
    ] as const
  ).flatMap((f): Case[] => [
    ['person_enrichment', ENRICH, f, false, true],
    ['person_enrichment', ENRICH, f, 1, false],
  ]),
  ['person_enrichment', ENRICH, 'type', 'light', false],
  // person enrich (higher tier): only its stated inputs
  ['person_enrich', ENRICH, 'name', 'Ada Lovelace', true],
  ['person_enrich', ENRICH, 'lookup_mode', 'deep', false],
  // lookup fields
  [
    'person_lookup_fields',
    ENRICH,
    'fields',
    [
      'displayname',
      'firstname',
      'lastname',
      'best_work_email',
      'best_personal_email',
      'mobile',
      'address',
      'location',
      'headline',
      'current_company',
      'current_title',
      'photo_url',
    ],
    true,
  ],
  ['person_lookup_fields', ENRICH, 'fields', ['salary'], false],
  ['person_lookup_fields', ENRICH, 'fields', 'mobile', false],
  ['person_lookup_fields', ENRICH, 'profile_urls', ['linkedin_url', 'github'], true],
  ['person_lookup_fields', ENRICH, 'profile_urls', ['LinkedIn'], false],
  ['person_lookup_fields', ENRICH, 'profile_urls', ['linked-in'], false],
  ['person_lookup_fields', ENRICH, 'probability_score', true, true],
  ['person_lookup_fields', ENRICH, 'company_domain', 'acme.com', true],
  ['person_lookup_fields', ENRICH, 'postal_code', 75001, false],
  // newsfeed
  ['person_newsfeed', NEWSFEED, 'limit', 1, true],
  ['person_newsfeed', NEWSFEED, 'limit', 1000, true],
  ['person_newsfeed', NEWSFEED, 'limit', 0, false],
  ['person_newsfeed', NEWSFEED, 'limit', 1001, false],
  ['person_newsfeed', NEWSFEED, 'limit', '5', false],
  ['person_newsfeed', NEWSFEED, 'posts_after', '2024-02-29', true],
  ['person_newsfeed', NEWSFEED, 'posts_after', '2023-02-29', false],
  ['person_newsfeed', NEWSFEED, 'posts_after', '2024-1-5', false],
  ['person_newsfeed', NEWSFEED, 'posts_after', '2024-01-05T00:00:00', false],
  ['person_newsfeed', NEWSFEED, 'email', 'a@example.com', false],
  // ask
  ['person_ask', ASK, 'question', 42, false],
  ['person_ask', ASK, 'name', 'Ada', false],
  // company search
  ['company_search', CSEARCH, 'max_results', 1, true],
  ['company_search', CSEARCH, 'max_results', 50, true],
  ['company_search', CSEARCH, 'max_results', 0, false],
  ['company_search', CSEARCH, 'max_results', 51, false],
  ['company_search', CSEARCH, 'max_results', '10', false],
  ['company_search', CSEARCH, 'validate_keyword', true, true],
  ['company_search', CSEARCH, 'validate_keyword_content', 'yes', false],
  ['company_search', CSEARCH, 'website_keyword', 'crm', true],
  ['company_search', CSEARCH, 'location', 'Lyon', true],
  // company enrichment
  ['company_enrichment', { domain: 'acme.com' }, 'email', 'x', false],
  ['company_enrichment', { domain: 'acme.com' }, 'linkedin_url', URL_, true],
  ['company_enrichment', { domain: 'acme.com' }, 'name', 'Acme', false],
];

describe('parameter bounds, types and enums of the core endpoints', () => {
  const cases = BOUNDS.map(([endpoint, base, field, value, ok], i) => ({
    endpoint,
    base,
    field,
    value,
    ok,
    name: `${endpoint} ${field} #${i}: ${ok ? 'accepts' : 'refuses'} ${JSON.stringify(value).slice(0, 40)}`,
  }));
  it.each(cases)('$name', ({ endpoint, base, field, value, ok }) => {
    const input = { ...base, [field]: value };
    if (ok) expect(problems(endpoint, input)).toEqual([]);
    else expect(fieldsOf(endpoint, input).map((f) => f.split('.')[0])).toEqual([field]);
  });
});

describe('aliases', () => {
  it('keywords stands for query in person search', () => {
    expect(accepts('person_search', { keywords: 'cto' })).toBe(true);
    expect(accepts('person_search', { keywords: 'cto', query: 'cto' })).toBe(true);
    expect(fieldsOf('person_search', { keywords: 'a', query: 'b' })).toEqual(['keywords']);
  });
  it.each(['person_enrichment', 'person_lookup_fields', 'person_newsfeed', 'company_enrichment'])(
    'linkedin_url stands for social_media_url in %s',
    (endpoint) => {
      expect(accepts(endpoint, { linkedin_url: URL_ })).toBe(true);
      expect(fieldsOf(endpoint, { linkedin_url: URL_, social_media_url: `${URL_}-2` })).toEqual([
        'linkedin_url',
      ]);
    },
  );
  it('linkedin_url stands for social_media_url in person ask', () => {
    expect(accepts('person_ask', { question: 'q', linkedin_url: URL_ })).toBe(true);
  });
  it('an alias conflict names the fields, never the values', () => {
    const msg =
      problems('person_search', { keywords: 'secret-a', query: 'secret-b' })[0]?.message ?? '';
    expect(msg).toBe('is an alias of query; give one or the other, or the same value');
  });
});

describe('problem messages', () => {
  it('name the field and do not echo values', () => {
    const p = problems('person_enrichment', {
      email: 'jane.doe.private@example.com-',
      lookup_mode: 'x',
    });
    expect(p).toEqual([
      { field: 'email', message: 'must be an email address' },
      { field: 'lookup_mode', message: 'must be one of fast, balanced, deep' },
    ]);
    expect(JSON.stringify(p)).not.toContain('jane');
  });
  it('an unknown parameter is counted, not named (its name may be personal data)', () => {
    expect(problems('person_search', { query: 'x', colour: 'blue' })).toEqual([
      { field: '', message: '1 key is not a parameter of this endpoint' },
    ]);
  });
  it('a non-object input fails as a whole', () => {
    expect(accepts('person_search', 'query')).toBe(false);
    expect(accepts('person_search', [])).toBe(false);
  });
});
