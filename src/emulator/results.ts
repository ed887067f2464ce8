// Payloads of every endpoint except person search, computed from the dataset and the input
// alone, so the same input always gives the same result. An input that identifies nobody gives an
// empty payload (null result or [] results), which is never charged.
import type { EndpointDef } from '../contract/index.js';
import type { Dataset } from './dataset/dataset.js';
import type { CompanyRecord, PersonRecord } from './dataset/records.js';
import {
  companyFunding,
  companyRecord,
  newsfeedOf,
  personProfile,
  personRow,
} from './dataset/render.js';
import { searchPeople } from './person-search.js';
import { Rng, seedOf } from './random.js';

/** What lands under `data`: `result` or `results`, per the endpoint's result path. */
export type Payload = { result: unknown } | { results: unknown[] };

interface Ctx {
  d: Dataset;
  seed: number;
  input: Record<string, unknown>;
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
const current = (p: PersonRecord) => p.organizations.find((o) => o.is_current);

function lookupFields(ctx: Ctx, p: PersonRecord): Record<string, unknown> | null {
  const org = current(p);
  const all: Record<string, unknown> = {
    displayname: p.displayname,
    firstname: p.firstname,
    lastname: p.lastname,
    best_work_email: p.businessEmail,
    best_personal_email: p.altEmails[0] ?? null,
    // Mobile data comes back under result.fullphone, as the interface states.
    mobile: p.phones
      .filter((x) => x.phone_type === 'mobile')
      .map((x) => ({ fullphone: x.fullphone, phone_type: x.phone_type })),
    address: `${p.city}, ${p.region}, ${p.country}`,
    location: p.location,
    headline: p.headline,
    current_company: org?.name ?? null,
    current_title: org?.title ?? null,
    photo_url: `https://images.pcds.dev/${p.docid}.jpg`,
  };
  const wanted = Array.isArray(ctx.input.fields)
    ? (ctx.input.fields as string[])
    : Object.keys(all);
  const out: Record<string, unknown> = {};
  for (const f of wanted) out[f === 'mobile' ? 'fullphone' : f] = all[f] ?? null;
  if (Array.isArray(ctx.input.profile_urls)) {
    const urls: Record<string, string | null> = {};
    for (const k of ctx.input.profile_urls as string[]) {
      const platform = k.replace(/_url$/, '');
      urls[k] = p.social[platform]?.url ?? null;
    }
    out.profile_urls = urls;
  }
  if (ctx.input.probability_score === true)
    out.probability_score = 0.6 + new Rng(seedOf(ctx.seed, 'p', p.docid)).float() * 0.4;
  return out;
}

function newsfeed(ctx: Ctx, p: PersonRecord): { newsfeed: unknown[] } {
  const after = str(ctx.input.posts_after);
  const limit = typeof ctx.input.limit === 'number' ? ctx.input.limit : 10;
  const posts = newsfeedOf(ctx.seed, p).filter((x) => !after || x.posted_at.slice(0, 10) > after);
  return { newsfeed: posts.slice(0, limit) };
}

function answer(p: PersonRecord, question: string): Record<string, unknown> {
  const org = current(p);
  return {
    question,
    answer: `${p.displayname} is ${org ? `${org.title} at ${org.name}` : 'between roles'}, based in ${p.city}, with ${p.experienceYears} years of experience.`,
    confidence: 0.8,
  };
}

function companyMatches(c: CompanyRecord, input: Record<string, unknown>): boolean {
  const industry = str(input.industry)?.toLowerCase();
  const kw = str(input.website_keyword)?.toLowerCase();
  const loc = str(input.location)?.toLowerCase();
  if (industry && !c.industry.toLowerCase().includes(industry)) return false;
  if (kw && !`${c.domain} ${c.name} ${c.description}`.toLowerCase().includes(kw)) return false;
  if (loc && !`${c.city} ${c.region} ${c.country}`.toLowerCase().includes(loc)) return false;
  return true;
}

/** Builders for endpoints about one person, by endpoint name. */
const PERSON: Record<string, (ctx: Ctx, p: PersonRecord) => unknown> = {
  person_enrichment: (_c, p) => personProfile(p),
  person_enrich: (_c, p) => personProfile(p),
  person_lookup_fields: lookupFields,
  person_newsfeed: newsfeed,
  person_newsfeed_lookup: newsfeed,
  person_ask: (c, p) => answer(p, str(c.input.question) ?? ''),
  person_ask_lookup: (c, p) => answer(p, str(c.input.question) ?? ''),
  person_identify: (_c, p) => ({
    displayname: p.displayname,
    headline: p.headline,
    social_profiles: personProfile(p).social_profiles,
    confidence: 0.9,
  }),
  person_events: (_c, p) => ({
    events: p.organizations.map((o) => ({
      type: 'job_start',
      title: `Started as ${o.title} at ${o.name}`,
      year: o.startYear,
    })),
  }),
  person_social_profiles: (_c, p) => ({ social_profiles: personProfile(p).social_profiles }),
  person_interests: (_c, p) => ({ interests: [...p.interests] }),
  person_interactions: (c, p) => ({
    interactions: newsfeedOf(c.seed, p)
      .slice(0, 5)
      .map((x) => ({
        platform: x.platform,
        post_url: x.url,
        likes: x.likes,
        comments: x.comments,
        posted_at: x.posted_at,
      })),
  }),
  person_articlesearch: (c, p) =>
    new Rng(seedOf(c.seed, 'articles', p.docid)).chance(0.7)
      ? [
          {
            title: `${p.displayname} on ${p.interests[0] ?? 'work'}`,
            url: `https://news.pcds.dev/articles/${p.docid}`,
            published_on: '2025-06-01',
          },
        ]
      : [],
  person_deep_research: (c, p) => ({
    summary: answer(p, '').answer,
    profile: personProfile(p),
    recent_posts: newsfeedOf(c.seed, p).slice(0, 3),
  }),
  person_simulation: (_c, p) => ({
    persona: {
      displayname: p.displayname,
      role: current(p)?.title ?? null,
      interests: [...p.interests],
    },
    communication_style: p.experienceYears > 10 ? 'concise' : 'detailed',
  }),
  person_single_social_lookup: (c, p) => {
    const url = str(c.input.social_media_url) ?? '';
    const entry = Object.entries(p.social).find(([, v]) =>
      url.toLowerCase().includes(v.url.split('/').pop() ?? '\u0000'),
    );
    return entry
      ? {
          platform: entry[0],
          url: entry[1].url,
          followers: entry[1].followers,
          displayname: p.displayname,
        }
      : null;
  },
  person_competitor_engagements: (c, p) => {
    const rng = new Rng(seedOf(c.seed, 'engagements', p.docid));
    return rng
      .sample(c.d.companies, rng.int(0, 3))
      .map((co) => ({ competitor: co.name, engagement: 'liked a post', date: '2025-09-15' }));
  },
  person_email: (_c, p) => ({ emails: [p.businessEmail, ...p.altEmails].filter(Boolean) }),
  person_phone: (_c, p) => ({ phones: p.phones.map((x) => ({ ...x })) }),
  person_social_lookup: (_c, p) => ({ social_profiles: personProfile(p).social_profiles }),
  person_social_account_validator: (_c, p) => ({ valid: true, displayname: p.displayname }),
  person_osint: (_c, p) => ({
    summary: `Public footprint of ${p.displayname}`,
    profiles: Object.keys(p.social),
  }),
};

/** Builders for endpoints about one company. */
const COMPANY: Record<string, (ctx: Ctx, c: CompanyRecord) => unknown> = {
  company_enrichment: (_x, c) => companyRecord(c),
  company_funding: (_x, c) => ({ company: c.name, ...companyFunding(c) }),
  company_funders: (_x, c) => ({
    company: c.name,
    funders: c.funding.investors.map((name) => ({ name, stage: c.funding.stage })),
  }),
  company_needs: (x, c) => ({
    company: c.name,
    needs: [
      `${c.industry} tooling`,
      'hiring',
      ...(str(x.input.content) ? ['content-related solutions'] : []),
    ],
  }),
  company_employees: (x, c) => ({
    employees: x.d.people
      .filter((p) => current(p)?.companyId === c.id)
      .slice(0, 25)
      .map((p) => personRow(x.d, p)),
  }),
  company_intent: (x, c) => ({
    company: c.name,
    intent_score: Math.round(new Rng(seedOf(x.seed, 'intent', c.id)).float() * 100),
    topics: [c.industry],
  }),
  company_competitor_engagements: (x, c) => ({
    company: c.name,
    engagements: x.d.companies
      .filter((o) => o.industry === c.industry && o.id !== c.id)
      .slice(0, 3)
      .map((o) => o.name),
  }),
  company_checkseller: (_x, c) => ({ company: c.name, is_seller: c.employeeCount > 50 }),
  company_checkfeature: (_x, c) => ({ company: c.name, features: [c.industry] }),
};

/** Endpoints that search rather than look one subject up. */
function searchLike(ctx: Ctx, endpoint: EndpointDef): unknown[] | undefined {
  const { d, input } = ctx;
  switch (endpoint.name) {
    case 'company_search': {
      const max = typeof input.max_results === 'number' ? input.max_results : 10;
      return d.companies
        .filter((c) => companyMatches(c, input))
        .slice(0, max)
        .map(companyRecord);
    }
    case 'company_discovery': {
      const q = (str(input.query) ?? '')
        .toLowerCase()
        .split(/\s+/)
        .filter((w) => w.length > 2);
      return d.companies
        .filter((c) =>
          q.some((w) =>
            `${c.name} ${c.industry} ${c.city} ${c.country} ${c.description}`
              .toLowerCase()
              .includes(w.replace(/s$/, '')),
          ),
        )
        .slice(0, 10)
        .map(companyRecord);
    }
    case 'person_discovery':
    case 'person_discover':
      return searchPeople(d, { query: str(input.query) ?? str(input.keywords) ?? '' })
        .slice(0, 10)
        .map((s) => personRow(d, s.person));
    case 'person_leads': {
      // Inputs are not stated: a deterministic pick from the input's fingerprint.
      const rng = new Rng(seedOf(ctx.seed, 'leads', JSON.stringify(input)));
      return rng.sample(d.people, 10).map((p) => personRow(d, p));
    }
    case 'person_connection_mapping': {
      const ids = [
        ...(Array.isArray(input.accounts) ? input.accounts : []),
        ...(Array.isArray(input.usernames) ? input.usernames : []),
        ...(Array.isArray(input.social_media_urls) ? input.social_media_urls : []),
      ] as string[];
      const people = ids
        .map((id) =>
          id.includes('/')
            ? d.findPerson({ social_media_url: id })
            : d.findPerson({ username: id }),
        )
        .filter((p): p is PersonRecord => !!p);
      return people;
    }
    default:
      return undefined;
  }
}

export function computePayload(
  d: Dataset,
  seed: number,
  endpoint: EndpointDef,
  input: Record<string, unknown>,
): Payload {
  const ctx: Ctx = { d, seed, input };
  const wrap = (v: unknown): Payload => {
    if (endpoint.resultPath === 'data.results')
      return { results: Array.isArray(v) ? v : v === null || v === undefined ? [] : [v] };
    return { result: v === undefined ? null : v };
  };

  const found = searchLike(ctx, endpoint);
  if (found !== undefined) {
    if (endpoint.name === 'person_connection_mapping') {
      const people = found as PersonRecord[];
      if (!people.length) return wrap(null);
      const connections = people.flatMap((a, i) =>
        people
          .slice(i + 1)
          .filter((b) =>
            a.organizations.some((o) => b.organizations.some((x) => x.companyId === o.companyId)),
          )
          .map((b) => ({ from: a.displayname, to: b.displayname, via: 'shared employer' })),
      );
      return wrap({ accounts: people.map((p) => personRow(d, p)), connections });
    }
    return wrap(found);
  }

  const personBuilder = PERSON[endpoint.name];
  const companyBuilder = COMPANY[endpoint.name];
  if (companyBuilder) {
    const c = d.findCompany(input);
    return wrap(c ? companyBuilder(ctx, c) : null);
  }
  if (personBuilder) {
    const p = d.findPerson(input);
    return wrap(p ? personBuilder(ctx, p) : null);
  }
  // Endpoints whose payload the interface does not show: the subject if one is named, else a
  // deterministic pick from the input's fingerprint (the input states nobody to look up).
  const p = d.findPerson(input);
  if (p) return wrap({ subject: personRow(d, p) });
  const c = d.findCompany(input);
  if (c) return wrap({ subject: companyRecord(c) });
  const rng = new Rng(seedOf(seed, endpoint.name, JSON.stringify(input)));
  return wrap({ subject: personRow(d, rng.pick(d.people)) });
}
