import { describe, expect, it } from 'vitest';
import { ENDPOINTS } from '../../../src/contract/catalogue.js';
import { accepts, problems } from './helpers.js';

const URL_ = 'https://www.linkedin.com/in/someone';
const CONTACT = 'email, phone, social_media_url, name';

// endpoint -> [minimal valid inputs (one per alternative), the rule message for an empty input]
const RULES: Record<string, [Record<string, unknown>[], string | null]> = {
  person_search: [
    [
      { query: 'q' },
      { keywords: 'q' },
      { custom_filters: { titles: ['CTO'] } },
      { docid_whitelist: ['d1'] },
      { cursor: 'c' },
      { request_id: 'r' },
    ],
    'needs at least one of: query, custom_filters, docid_whitelist, cursor, request_id',
  ],
  person_enrichment: [
    [
      { email: 'a@example.com' },
      { phone: '+15550100' },
      { social_media_url: URL_ },
      { linkedin_url: URL_ },
      { name: 'Ada' },
    ],
    `needs at least one of: ${CONTACT}`,
  ],
  person_enrich: [
    [
      { email: 'a@example.com' },
      { phone: '+15550100' },
      { social_media_url: URL_ },
      { name: 'Ada' },
    ],
    `needs at least one of: ${CONTACT}`,
  ],
  person_lookup_fields: [
    [
      { email: 'a@example.com' },
      { phone: '1' },
      { linkedin_url: URL_ },
      { name: 'n' },
      { company: 'c' },
      { company_domain: 'c.com' },
      { city: 'c' },
      { state: 's' },
      { postal_code: '1' },
      { location: 'l' },
    ],
    'needs at least one of: email, phone, social_media_url, name, company, company_domain, city, state, postal_code, location',
  ],
  person_newsfeed: [[{ social_media_url: URL_ }, { linkedin_url: URL_ }], null],
  person_ask: [
    [
      { question: 'q', email: 'a@example.com' },
      { question: 'q', phone: '1' },
      { question: 'q', linkedin_url: URL_ },
    ],
    null,
  ],
  company_search: [
    [{ industry: 'i' }, { website_keyword: 'w' }, { location: 'l' }],
    'needs at least one of: industry, website_keyword, location',
  ],
  company_enrichment: [
    [{ domain: 'acme.com' }, { email: 'a@acme.com' }, { phone: '1' }, { linkedin_url: URL_ }],
    'needs at least one of: domain, email, phone, social_media_url',
  ],
  person_identify: [
    [{ email: 'a@example.com' }, { phone: '1' }, { social_media_url: URL_ }, { username: 'u' }],
    'needs at least one of: email, phone, social_media_url, username',
  ],
  person_newsfeed_lookup: [[{ social_media_url: URL_ }], 'needs at least one of: social_media_url'],
  person_connection_mapping: [
    [{ accounts: ['a'] }, { usernames: ['u'] }, { social_media_urls: [URL_] }],
    'needs at least one of: accounts, usernames, social_media_urls',
  ],
  person_events: [[{ email: 'a@example.com' }, { name: 'n' }], `needs at least one of: ${CONTACT}`],
  person_social_profiles: [
    [{ phone: '1' }, { social_media_url: URL_ }],
    `needs at least one of: ${CONTACT}`,
  ],
  person_interests: [
    [{ email: 'a@example.com' }, { name: 'n' }],
    `needs at least one of: ${CONTACT}`,
  ],
  person_interactions: [
    [{ social_media_url: URL_ }, { email: 'a@example.com' }, { phone: '1' }],
    'needs at least one of: social_media_url, email, phone',
  ],
  person_articlesearch: [
    [{ name: 'n' }, { social_media_url: URL_ }, { email: 'a@example.com' }],
    'needs at least one of: name, social_media_url, email',
  ],
  person_deep_research: [
    [
      { email: 'a@example.com' },
      { phone: '1' },
      { social_media_url: URL_ },
      { name: 'n', company: 'c' },
      { name: 'n', city: 'c' },
    ],
    'needs at least one of: email, phone, social_media_url, name+company, name+city',
  ],
  person_discovery: [[{ query: 'q' }], 'needs at least one of: query'],
  person_discover: [[{ keywords: 'k' }], 'needs at least one of: keywords'],
  person_ask_lookup: [
    [
      { question: 'q', email: 'a@example.com' },
      { question: 'q', phone: '1' },
      { question: 'q', social_media_url: URL_ },
    ],
    null,
  ],
  person_simulation: [
    [{ email: 'a@example.com' }, { name: 'n' }],
    `needs at least one of: ${CONTACT}`,
  ],
  person_single_social_lookup: [
    [{ social_media_url: URL_ }],
    'needs at least one of: social_media_url',
  ],
  person_competitor_engagements: [
    [{ social_media_url: URL_ }, { email: 'a@example.com' }, { phone: '1' }],
    'needs at least one of: social_media_url, email, phone',
  ],
  company_needs: [
    [{ company_name: 'c' }, { content: 'c' }],
    'needs at least one of: company_name, content',
  ],
  company_funding: [
    [{ company_name: 'c' }, { company_domain: 'c.com' }],
    'needs at least one of: company_name, company_domain',
  ],
  company_funders: [
    [{ company_name: 'c' }, { company_domain: 'c.com' }],
    'needs at least one of: company_name, company_domain',
  ],
  company_discovery: [[{ query: 'q' }], 'needs at least one of: query'],
};

// Inputs not stated by the interface: any non-empty object is accepted.
const FREE_FORM = [
  'person_leads',
  'company_checkseller',
  'company_checkfeature',
  'person_osint',
  'person_email',
  'person_phone',
  'person_social_lookup',
  'person_social_account_validator',
  'company_employees',
  'company_intent',
  'company_competitor_engagements',
  'person_enrichment_feedback',
  'usage',
];

describe('"at least one of" rules', () => {
  it('every catalogue entry is covered by this file', () => {
    expect(ENDPOINTS.map((e) => e.name).sort()).toEqual(
      [...Object.keys(RULES), ...FREE_FORM].sort(),
    );
  });

  describe.each(Object.entries(RULES))('%s', (endpoint, [valid, rule]) => {
    it.each(valid)('accepts the minimal input %j', (input) => {
      expect(problems(endpoint, input)).toEqual([]);
    });
    if (rule) {
      it('refuses an empty input, naming the rule', () => {
        expect(problems(endpoint, {})).toEqual([{ field: '', message: rule }]);
      });
      it('treats null and empty strings as absent', () => {
        const [first] = valid;
        const blanked = Object.fromEntries(Object.keys(first ?? {}).map((k) => [k, null]));
        expect(accepts(endpoint, blanked)).toBe(false);
      });
    }
  });

  it.each(FREE_FORM.filter((e) => e !== 'usage'))(
    '%s accepts any field but refuses an empty input',
    (endpoint) => {
      expect(problems(endpoint, { anything: 'x' })).toEqual([]);
      expect(problems(endpoint, {})).toEqual([
        { field: '', message: 'the input is empty; send at least one field' },
      ]);
    },
  );

  it('structured parts alone do not satisfy the person search rule', () => {
    expect(
      problems('person_search', {
        person_name: 'Ada',
        role: 'CTO',
        company_name: 'Acme',
        geography: 'UK',
        tenure: '5',
        college: 'MIT',
      }),
    ).toEqual([{ field: '', message: RULES.person_search?.[1] }]);
  });
  it('keywords is not an alias of query on /person/discovery', () => {
    expect(problems('person_discovery', { keywords: 'k' })).toEqual([
      { field: '', message: 'needs at least one of: query' },
    ]);
  });
  it('name alone does not satisfy deep research (it needs company or city)', () => {
    expect(accepts('person_deep_research', { name: 'n' })).toBe(false);
  });

  describe('required fields', () => {
    it('person newsfeed requires social_media_url', () => {
      expect(problems('person_newsfeed', {})).toEqual([
        { field: 'social_media_url', message: 'is required' },
      ]);
      expect(problems('person_newsfeed', { limit: 5 })).toEqual([
        { field: 'social_media_url', message: 'is required' },
      ]);
    });
    it('person ask requires question and one contact', () => {
      expect(problems('person_ask', {})).toEqual([
        { field: 'question', message: 'is required' },
        { field: '', message: 'needs at least one of: email, phone, social_media_url' },
      ]);
      expect(problems('person_ask', { email: 'a@example.com' })).toEqual([
        { field: 'question', message: 'is required' },
      ]);
      expect(problems('person_ask', { question: 'q', name: 'n' })).toEqual([
        { field: 'name', message: 'is not a parameter of this endpoint' },
        { field: '', message: 'needs at least one of: email, phone, social_media_url' },
      ]);
    });
    it('person ask-lookup requires question', () => {
      expect(problems('person_ask_lookup', { email: 'a@example.com' })).toEqual([
        { field: 'question', message: 'is required' },
      ]);
    });
  });
});
