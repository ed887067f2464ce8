// Renders records as the payloads the interface documents. The person profile carries exactly
// the documented fields; internal fields (docid, search text, company ids) never leave here.
import { Rng, seedOf } from '../random.js';
import type { Dataset } from './dataset.js';
import type { CompanyRecord, PersonRecord } from './records.js';
import { POST_TOPICS } from './words.js';

export const PROFILE_FIELDS = [
  'displayname',
  'firstname',
  'lastname',
  'headline',
  'location',
  'best_business_email',
  'altemails',
  'fullphone',
  'social_profiles',
  'organizations',
  'total_experience_years',
] as const;

export function personProfile(p: PersonRecord): Record<string, unknown> {
  return {
    displayname: p.displayname,
    firstname: p.firstname,
    lastname: p.lastname,
    headline: p.headline,
    location: p.location,
    best_business_email: p.businessEmail ?? p.altEmails[0] ?? null,
    altemails: p.businessEmail ? [...p.altEmails] : p.altEmails.slice(1),
    fullphone: p.phones.map((x) => ({ fullphone: x.fullphone, phone_type: x.phone_type })),
    social_profiles: Object.fromEntries(
      Object.entries(p.social).map(([k, v]) => [k, { url: v.url, followers: v.followers }]),
    ),
    organizations: p.organizations.map((o) => ({
      name: o.name,
      title: o.title,
      is_current: o.is_current,
    })),
    total_experience_years: p.experienceYears,
  };
}

export interface NewsfeedPost {
  id: string;
  platform: string;
  url: string;
  text: string;
  posted_at: string;
  likes: number;
  comments: number;
}

/**
 * The person's posts, newest first. Dates are drawn from a fixed window (not from "now") so the
 * same seed gives the same feed on every run.
 */
export function newsfeedOf(seed: number, p: PersonRecord): NewsfeedPost[] {
  const rng = new Rng(seedOf(seed, 'newsfeed', p.docid));
  const platforms = Object.keys(p.social);
  if (!platforms.length) return [];
  const n = rng.int(0, 40);
  const start = Date.UTC(2024, 0, 1);
  const span = Date.UTC(2026, 9, 31) - start;
  const posts: NewsfeedPost[] = [];
  for (let k = 0; k < n; k++) {
    const platform = rng.pick(platforms);
    const at = new Date(start + Math.floor(rng.float() * span));
    const id = `${p.docid}-${k}`;
    posts.push({
      id,
      platform,
      url: `${p.social[platform]?.url ?? ''}/posts/${id}`,
      text: `Post about ${rng.pick(POST_TOPICS)}.`,
      posted_at: at.toISOString().slice(0, 19),
      likes: rng.int(0, 2000),
      comments: rng.int(0, 200),
    });
  }
  return posts.sort((a, b) => (a.posted_at < b.posted_at ? 1 : a.posted_at > b.posted_at ? -1 : 0));
}

export function companyRecord(c: CompanyRecord): Record<string, unknown> {
  return {
    name: c.name,
    domain: c.domain,
    website: `https://www.${c.domain}`,
    industry: c.industry,
    location: `${c.city}, ${c.region}, ${c.country}`,
    employee_count: c.employeeCount,
    founded_year: c.foundedYear,
    description: c.description,
    phone: c.phone,
    social_profiles: { linkedin: { url: c.linkedinUrl } },
    funding: companyFunding(c),
  };
}

export function companyFunding(c: CompanyRecord): Record<string, unknown> {
  return {
    stage: c.funding.stage,
    total_raised: c.funding.totalRaised,
    last_round_date: c.funding.lastRoundDate,
    last_round_amount: c.funding.lastRoundAmount,
    investors: [...c.funding.investors],
  };
}

/** A short row for search results and lists. */
export function personRow(d: Dataset, p: PersonRecord): Record<string, unknown> {
  const org = p.organizations.find((o) => o.is_current);
  return {
    docid: p.docid,
    displayname: p.displayname,
    headline: p.headline,
    location: p.location,
    current_title: org?.title ?? null,
    current_company: org?.name ?? null,
    current_company_domain: d.currentCompany(p)?.domain ?? null,
    linkedin_url: p.social.linkedin?.url ?? null,
  };
}
