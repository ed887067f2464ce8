// The seeded dataset with its lookup indexes: find a person or company by any identity the
// endpoints accept. Built once per seed and size, then shared (it is read-only).
import { generateCompanies, generatePeople, type DatasetSize } from './generate.js';
import {
  normDomain,
  normEmail,
  normName,
  normPhone,
  normUrl,
  type CompanyRecord,
  type PersonRecord,
} from './records.js';

export class Dataset {
  readonly people: PersonRecord[];
  readonly companies: CompanyRecord[];
  private readonly personByEmail = new Map<string, PersonRecord>();
  private readonly personByPhone = new Map<string, PersonRecord>();
  private readonly personByUrl = new Map<string, PersonRecord>();
  private readonly personByHandle = new Map<string, PersonRecord>();
  private readonly peopleByName = new Map<string, PersonRecord[]>();
  private readonly personByDocid = new Map<string, PersonRecord>();
  private readonly companyById = new Map<string, CompanyRecord>();
  private readonly companyByDomain = new Map<string, CompanyRecord>();
  private readonly companyByName = new Map<string, CompanyRecord>();
  private readonly companyByPhone = new Map<string, CompanyRecord>();
  private readonly companyByUrl = new Map<string, CompanyRecord>();

  constructor(
    readonly seed: number,
    size: DatasetSize,
  ) {
    this.companies = generateCompanies(seed, size.companies);
    this.people = generatePeople(seed, size.people, this.companies);
    for (const c of this.companies) {
      this.companyById.set(c.id, c);
      this.companyByDomain.set(c.domain, c);
      this.companyByName.set(normName(c.name), c);
      this.companyByPhone.set(normPhone(c.phone), c);
      this.companyByUrl.set(normUrl(c.linkedinUrl), c);
    }
    for (const p of this.people) {
      this.personByDocid.set(p.docid, p);
      if (p.businessEmail) this.personByEmail.set(normEmail(p.businessEmail), p);
      for (const e of p.altEmails) this.personByEmail.set(normEmail(e), p);
      for (const ph of p.phones) this.personByPhone.set(normPhone(ph.fullphone), p);
      for (const s of Object.values(p.social)) {
        this.personByUrl.set(normUrl(s.url), p);
        const handle = normUrl(s.url).split('/').pop();
        if (handle) this.personByHandle.set(handle, p);
      }
      const key = normName(p.displayname);
      const list = this.peopleByName.get(key);
      if (list) list.push(p);
      else this.peopleByName.set(key, [p]);
    }
  }

  personByDocId(docid: string): PersonRecord | undefined {
    return this.personByDocid.get(docid);
  }

  company(id: string): CompanyRecord | undefined {
    return this.companyById.get(id);
  }

  currentCompany(p: PersonRecord): CompanyRecord | undefined {
    const org = p.organizations.find((o) => o.is_current);
    return org ? this.companyById.get(org.companyId) : undefined;
  }

  /**
   * The person an input identifies: email, phone, social URL, username, or a name narrowed by
   * company or city. Undefined for an unknown identity.
   */
  findPerson(input: Record<string, unknown>): PersonRecord | undefined {
    const s = (k: string) => (typeof input[k] === 'string' ? input[k] : undefined);
    const email = s('email');
    if (email) {
      const p = this.personByEmail.get(normEmail(email));
      if (p) return p;
    }
    const phone = s('phone');
    if (phone) {
      const p = this.personByPhone.get(normPhone(phone));
      if (p) return p;
    }
    const url = s('social_media_url') ?? s('linkedin_url');
    if (url) {
      const p = this.personByUrl.get(normUrl(url));
      if (p) return p;
    }
    const username = s('username');
    if (username) {
      const p = this.personByHandle.get(username.trim().toLowerCase().replace(/^@/, ''));
      if (p) return p;
    }
    const name = s('name');
    if (name) {
      const candidates = this.peopleByName.get(normName(name)) ?? [];
      const company = s('company')?.toLowerCase();
      const city = s('city')?.toLowerCase();
      return candidates.find(
        (p) =>
          (!company || p.organizations.some((o) => o.name.toLowerCase().includes(company))) &&
          (!city || p.city.toLowerCase() === city),
      );
    }
    return undefined;
  }

  /** A company by domain, email domain, phone, profile URL or name. */
  findCompany(input: Record<string, unknown>): CompanyRecord | undefined {
    const s = (k: string) => (typeof input[k] === 'string' ? input[k] : undefined);
    const domain = s('domain') ?? s('company_domain');
    if (domain) {
      const c = this.companyByDomain.get(normDomain(domain));
      if (c) return c;
    }
    const email = s('email');
    if (email && email.includes('@')) {
      const c = this.companyByDomain.get(normDomain(email.split('@').pop() ?? ''));
      if (c) return c;
    }
    const phone = s('phone');
    if (phone) {
      const c = this.companyByPhone.get(normPhone(phone));
      if (c) return c;
    }
    const url = s('social_media_url') ?? s('linkedin_url');
    if (url) {
      const c = this.companyByUrl.get(normUrl(url));
      if (c) return c;
    }
    const name = s('company_name') ?? s('company');
    if (name) return this.companyByName.get(normName(name));
    return undefined;
  }
}

const cache = new Map<string, Dataset>();

export function datasetFor(seed: number, size: DatasetSize): Dataset {
  const key = `${seed}:${size.people}:${size.companies}`;
  let d = cache.get(key);
  if (!d) {
    d = new Dataset(seed, size);
    cache.set(key, d);
  }
  return d;
}
