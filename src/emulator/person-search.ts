// Person search over the dataset: query words, structured parts, custom_filters, exclude and
// docid_whitelist narrow the people; require_* drop rows lacking contacts; show_* and the other
// toggles shape each row. Deterministic: the same input gives the same rows in the same order.
import { applySearchTierRules, contactFlags } from '../contract/index.js';
import type { Dataset } from './dataset/dataset.js';
import type { PersonRecord } from './dataset/records.js';
import { newsfeedOf, personRow } from './dataset/render.js';

const STOPWORDS = new Set(
  'a an and any are at based by find for from in is list me near of on or people person show that the to who with work works working'.split(
    ' ',
  ),
);

/** Query words, lower-cased, with a plural "s" dropped so "engineers" finds "engineer". */
export function queryTerms(query: string): string[] {
  return query
    .toLowerCase()
    .split(/[^a-z0-9+#.-]+/)
    .map((w) => w.replace(/^[.-]+|[.-]+$/g, ''))
    .filter((w) => w.length > 1 && !STOPWORDS.has(w))
    .map((w) => (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') ? w.slice(0, -1) : w));
}

const lower = (v: unknown) => (typeof v === 'string' ? v.toLowerCase() : undefined);
// A filter's values are normalised once per search, not once per person it is matched against.
const normalised = new WeakMap<object, string[]>();
const list = (v: unknown): string[] => {
  if (Array.isArray(v)) {
    let l = normalised.get(v);
    if (!l) {
      l = v
        .filter((x) => typeof x === 'string' || typeof x === 'number')
        .map((x) => String(x).toLowerCase());
      normalised.set(v, l);
    }
    return l;
  }
  return typeof v === 'string' || typeof v === 'number' ? [String(v).toLowerCase()] : [];
};
// Long filter lists stay cheap: a list's verdict on a value (the dataset repeats titles,
// companies, places and schools) is computed once per search, and exact lookups use a set.
const SHORT = 8;
const verdicts = new WeakMap<string[], Map<string, boolean>>();
const anyIn = (needles: string[], hay: string): boolean => {
  if (needles.length <= SHORT) return needles.some((n) => hay.includes(n));
  let seen = verdicts.get(needles);
  if (!seen) verdicts.set(needles, (seen = new Map()));
  let verdict = seen.get(hay);
  if (verdict === undefined) {
    verdict = needles.some((n) => hay.includes(n));
    seen.set(hay, verdict);
  }
  return verdict;
};
const sets = new WeakMap<string[], Set<string>>();
const isIn = (values: string[], x: string): boolean => {
  if (values.length <= SHORT) return values.includes(x);
  let set = sets.get(values);
  if (!set) sets.set(values, (set = new Set(values)));
  return set.has(x);
};

function tenureMatches(tenure: string, years: number): boolean {
  const range = /(\d+)\s*-\s*(\d+)/.exec(tenure);
  if (range) return years >= Number(range[1]) && years <= Number(range[2]);
  const n = /(\d+)/.exec(tenure);
  return n ? years >= Number(n[1]) : true;
}

/** One filter criterion (as in custom_filters or exclude) against one person. Unknown keys match. */
function criterionMatches(d: Dataset, p: PersonRecord, key: string, value: unknown): boolean {
  const current = p.organizations.find((o) => o.is_current);
  const company = d.currentCompany(p);
  switch (key) {
    case 'locations':
      return anyIn(list(value), p.location.toLowerCase());
    case 'titles':
      return anyIn(list(value), (current?.title ?? '').toLowerCase());
    case 'companies':
      return anyIn(list(value), (current?.name ?? '').toLowerCase());
    case 'industries':
      return isIn(list(value), (company?.industry ?? '').toLowerCase());
    case 'schools':
      return anyIn(list(value), p.school.toLowerCase());
    case 'names':
      return anyIn(list(value), p.displayname.toLowerCase());
    case 'docids':
      return isIn(list(value), p.docid);
    case 'has_email':
      return (p.businessEmail !== null || p.altEmails.length > 0) === (value === true);
    case 'has_phone':
      return p.phones.length > 0 === (value === true);
    case 'min_company_employee_count':
      return (company?.employeeCount ?? 0) >= Number(value);
    case 'max_company_employee_count':
      return (company?.employeeCount ?? Infinity) <= Number(value);
    case 'company_investor_names':
      return !!company && anyIn(list(value), company.funding.investors.join('|').toLowerCase());
    case 'company_funding_stages':
      return !!company && isIn(list(value), company.funding.stage);
    case 'min_company_total_funding_raised':
      return !!company && company.funding.totalRaised >= Number(value);
    case 'company_last_funding_after_date':
      return !!company && typeof value === 'string' && company.funding.lastRoundDate > value;
    default:
      return true;
  }
}

const EXCLUDE_KEYS = new Set([
  'locations',
  'titles',
  'companies',
  'industries',
  'schools',
  'names',
  'docids',
]);

export interface ScoredPerson {
  person: PersonRecord;
  score: number;
}

export function searchPeople(d: Dataset, input: Record<string, unknown>): ScoredPerson[] {
  const query = typeof input.query === 'string' ? input.query : '';
  const exact = input.exact_match === true;
  const terms = exact ? [query.toLowerCase().trim()] : queryTerms(query);
  const structured: [string, string][] = [];
  for (const k of ['person_name', 'role', 'company_name', 'geography', 'tenure', 'college']) {
    const v = lower(input[k]);
    if (v) structured.push([k, v.trim()]);
  }
  const filters = (input.custom_filters ?? {}) as Record<string, unknown>;
  const exclude = (input.exclude ?? {}) as Record<string, unknown>;
  const whitelist = Array.isArray(input.docid_whitelist)
    ? new Set(input.docid_whitelist as string[])
    : undefined;
  const requireEmails = input.require_emails === true;
  const requirePhones = input.require_phone_numbers === true;
  const requireEither = input.require_phones_or_emails === true;

  const out: ScoredPerson[] = [];
  for (const p of d.people) {
    if (whitelist && !whitelist.has(p.docid)) continue;
    const hasEmail = p.businessEmail !== null || p.altEmails.length > 0;
    const hasPhone = p.phones.length > 0;
    if (requireEmails && !hasEmail) continue;
    if (requirePhones && !hasPhone) continue;
    if (requireEither && !hasEmail && !hasPhone) continue;
    if (!terms.every((t) => p.searchText.includes(t))) continue;
    let ok = true;
    for (const [k, v] of structured) {
      const current = p.organizations.find((o) => o.is_current);
      if (k === 'person_name') ok = p.displayname.toLowerCase().includes(v);
      else if (k === 'role') ok = (current?.title ?? '').toLowerCase().includes(v);
      else if (k === 'company_name') ok = (current?.name ?? '').toLowerCase().includes(v);
      else if (k === 'geography') ok = p.location.toLowerCase().includes(v);
      else if (k === 'college') ok = p.school.toLowerCase().includes(v);
      else if (k === 'tenure') ok = tenureMatches(v, p.experienceYears);
      if (!ok) break;
    }
    if (!ok) continue;
    for (const [k, v] of Object.entries(filters)) {
      if (!criterionMatches(d, p, k, v)) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    if (
      Object.entries(exclude).some(([k, v]) => EXCLUDE_KEYS.has(k) && criterionMatches(d, p, k, v))
    )
      continue;
    // Words found in the headline (current role and employer) rank first.
    const headline = p.headline.toLowerCase();
    const score = terms.reduce((s, t) => s + (headline.includes(t) ? 2 : 1), 0);
    out.push({ person: p, score });
  }
  out.sort((a, b) => b.score - a.score || a.person.index - b.person.index);
  return out;
}

/** One result row, shaped by the toggles (after the light-tier rule). */
export function searchRow(
  d: Dataset,
  seed: number,
  s: ScoredPerson,
  input: Record<string, unknown>,
  maxScore: number,
): Record<string, unknown> {
  const tiered = applySearchTierRules(input);
  const contacts = contactFlags(tiered);
  const p = s.person;
  const row = personRow(d, p);
  if (contacts.emails)
    row.emails = [p.businessEmail, ...p.altEmails].filter((e): e is string => !!e);
  if (contacts.phones)
    row.phone_numbers = p.phones.map((x) => ({ fullphone: x.fullphone, phone_type: x.phone_type }));
  if (tiered.profile_scoring === true)
    row.score = maxScore ? Math.round((s.score / maxScore) * 100) / 100 : 1;
  if (tiered.insights === true) {
    row.insights = `${p.firstname} has ${p.experienceYears} years of experience; interests include ${p.interests.join(', ')}.`;
  }
  if (tiered.newsfeed !== undefined) {
    const platforms = tiered.newsfeed === 'all' ? undefined : new Set(tiered.newsfeed as string[]);
    row.newsfeed = newsfeedOf(seed, p)
      .filter((post) => !platforms || platforms.has(post.platform))
      .slice(0, 3);
  }
  return row;
}
