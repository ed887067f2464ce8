// Builds the seeded synthetic dataset: companies first, then people working at them. The same
// seed always produces the same records in the same order.
import { Rng, seedOf } from '../random.js';
import type { CompanyRecord, Organization, PersonRecord } from './records.js';
import {
  COMPANY_FORMS,
  COMPANY_PREFIXES,
  COMPANY_SUFFIXES,
  EMAIL_PROVIDERS,
  EXECUTIVE_TITLES,
  FIRST_NAMES,
  FUNCTIONS,
  FUNDING_STAGES,
  INDUSTRIES,
  INTERESTS,
  INVESTORS,
  LAST_NAMES,
  LOCATIONS,
  PHONE_TYPES,
  SCHOOLS,
  SENIORITIES,
  SOCIAL_PLATFORMS,
  TLDS,
} from './words.js';

export interface DatasetSize {
  people: number;
  companies: number;
}

const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, '');
const pad = (n: number, w: number) => String(n).padStart(w, '0');
const FUNDING_BASE: Record<string, number> = {
  pre_seed: 500_000,
  seed: 2_000_000,
  series_a: 10_000_000,
  series_b: 30_000_000,
  series_c: 70_000_000,
  series_d: 150_000_000,
  ipo: 400_000_000,
};

export function generateCompanies(seed: number, count: number): CompanyRecord[] {
  const rng = new Rng(seedOf(seed, 'companies'));
  const used = new Set<string>();
  const out: CompanyRecord[] = [];
  for (let i = 0; i < count; i++) {
    let base = '';
    for (let tries = 0; tries < 20; tries++) {
      base = `${rng.pick(COMPANY_PREFIXES)}${rng.pick(COMPANY_SUFFIXES)}`;
      if (!used.has(base)) break;
    }
    if (used.has(base)) base = `${base}${i}`;
    used.add(base);
    const loc = rng.pick(LOCATIONS);
    const stageIndex = rng.int(0, FUNDING_STAGES.length - 1);
    const stage = FUNDING_STAGES[stageIndex] as string;
    const lastAmount = Math.round((FUNDING_BASE[stage] ?? 1_000_000) * (0.5 + rng.float()));
    const industry = rng.pick(INDUSTRIES);
    out.push({
      id: `c${pad(i, 5)}`,
      name: `${base}${rng.pick(COMPANY_FORMS)}`,
      domain: `${slug(base)}.${rng.pick(TLDS)}`,
      industry,
      city: loc.city,
      region: loc.region,
      country: loc.country,
      employeeCount: Math.round(10 ** (1 + rng.float() * 3.7)),
      foundedYear: rng.int(1995, 2023),
      description: `${base} builds ${industry.toLowerCase()} products for teams worldwide.`,
      phone: `+${loc.cc}800${pad(i, 7)}`,
      linkedinUrl: `https://www.linkedin.com/company/${slug(base)}`,
      funding: {
        stage,
        totalRaised: Math.round(lastAmount * (1 + stageIndex * 0.8)),
        lastRoundDate: `${rng.int(2018, 2025)}-${pad(rng.int(1, 12), 2)}-${pad(rng.int(1, 28), 2)}`,
        lastRoundAmount: lastAmount,
        investors: rng.sample(INVESTORS, rng.int(1, 4)),
      },
    });
  }
  return out;
}

function titleFor(rng: Rng): { title: string; area: string } {
  if (rng.chance(0.06)) return { title: rng.pick(EXECUTIVE_TITLES), area: 'Executive' };
  const f = rng.pick(FUNCTIONS);
  const s = rng.pick(SENIORITIES);
  // "Head of Engineering" reads better than "Head of Software Engineer".
  if (s === 'Head of ' || s === 'VP of ' || s === 'Director of ')
    return { title: `${s}${f.area}`, area: f.area };
  return { title: `${s}${f.role}`, area: f.area };
}

export function generatePeople(
  seed: number,
  count: number,
  companies: CompanyRecord[],
): PersonRecord[] {
  const rng = new Rng(seedOf(seed, 'people'));
  const emails = new Set<string>();
  const out: PersonRecord[] = [];
  const byId = new Map(companies.map((c) => [c.id, c]));
  const unique = (local: string, domain: string) => {
    let e = `${local}@${domain}`;
    for (let n = 2; emails.has(e); n++) e = `${local}${n}@${domain}`;
    emails.add(e);
    return e;
  };
  for (let i = 0; i < count; i++) {
    const firstname = rng.pick(FIRST_NAMES);
    const lastname = rng.pick(LAST_NAMES);
    const displayname = `${firstname} ${lastname}`;
    const loc = rng.pick(LOCATIONS);
    const nOrgs = rng.int(1, 4);
    const experienceYears = rng.int(nOrgs, 30);
    const orgs: Organization[] = [];
    let year = 2026 - experienceYears;
    for (let k = 0; k < nOrgs; k++) {
      const c = rng.pick(companies);
      const current = k === nOrgs - 1 && !rng.chance(0.05);
      const end = current
        ? null
        : Math.min(2026, year + rng.int(1, Math.max(1, Math.floor(experienceYears / nOrgs) + 1)));
      orgs.push({
        name: c.name,
        companyId: c.id,
        title: titleFor(rng).title,
        is_current: current,
        startYear: year,
        endYear: end,
      });
      year = end ?? year;
    }
    orgs.reverse(); // most recent first, as profiles list them
    const currentOrg = orgs.find((o) => o.is_current);
    const currentCompany = currentOrg ? byId.get(currentOrg.companyId) : undefined;
    const local = `${firstname}.${lastname}`.toLowerCase().replace(/[^a-z.]/g, '');
    const businessEmail =
      currentCompany && rng.chance(0.85) ? unique(local, currentCompany.domain) : null;
    const altEmails: string[] = [];
    const nAlt = rng.chance(0.6) ? rng.int(1, 2) : 0;
    for (let k = 0; k < nAlt; k++) {
      altEmails.push(
        unique(`${local.replace('.', k ? '_' : '')}${rng.int(1, 99)}`, rng.pick(EMAIL_PROVIDERS)),
      );
    }
    const phones: PersonRecord['phones'] = [];
    if (rng.chance(0.7)) {
      const n = rng.int(1, 2);
      for (let k = 0; k < n; k++) {
        phones.push({
          fullphone: `+${loc.cc}55${k}${pad(i, 7)}`,
          phone_type: k === 0 ? 'mobile' : rng.pick(PHONE_TYPES),
        });
      }
    }
    const handle = `${firstname}${lastname}`.toLowerCase().replace(/[^a-z]/g, '') + pad(i, 4);
    const social: PersonRecord['social'] = {};
    for (const p of SOCIAL_PLATFORMS) {
      const has = p === 'linkedin' ? rng.chance(0.95) : rng.chance(0.35);
      if (!has) continue;
      const url =
        p === 'linkedin'
          ? `https://www.linkedin.com/in/${firstname.toLowerCase()}-${lastname.toLowerCase().replace(/\s+/g, '-')}-${pad(i, 4)}`
          : p === 'twitter'
            ? `https://twitter.com/${handle}`
            : `https://www.${p}.com/${handle}`;
      social[p] = { url, followers: Math.round(10 ** (1 + rng.float() * 4)) };
    }
    const title = orgs[0]?.title ?? 'Professional';
    const headline = currentOrg
      ? `${currentOrg.title} at ${currentOrg.name}`
      : `${title}, open to opportunities`;
    const school = rng.pick(SCHOOLS);
    const interests = rng.sample(INTERESTS, rng.int(2, 4));
    const location = `${loc.city}, ${loc.region}, ${loc.country}`;
    const industries = orgs.map((o) => byId.get(o.companyId)?.industry ?? '');
    out.push({
      docid: `p${pad(i, 6)}`,
      index: i,
      firstname,
      lastname,
      displayname,
      headline,
      city: loc.city,
      region: loc.region,
      country: loc.country,
      location,
      businessEmail,
      altEmails,
      phones,
      social,
      organizations: orgs,
      experienceYears,
      school,
      interests,
      searchText: [
        displayname,
        headline,
        ...orgs.map((o) => `${o.title} ${o.name}`),
        location,
        school,
        ...industries,
      ]
        .join(' ')
        .toLowerCase(),
    });
  }
  return out;
}
