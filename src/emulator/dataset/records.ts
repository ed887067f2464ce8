// Record types of the synthetic dataset and the normalisers used to look records up, so that
// "Jane.Doe@X.com " and "jane.doe@x.com" find the same person.

export interface CompanyRecord {
  id: string;
  name: string;
  domain: string;
  industry: string;
  city: string;
  region: string;
  country: string;
  employeeCount: number;
  foundedYear: number;
  description: string;
  phone: string;
  linkedinUrl: string;
  funding: {
    stage: string;
    totalRaised: number;
    lastRoundDate: string;
    lastRoundAmount: number;
    investors: string[];
  };
}

export interface Organization {
  name: string;
  title: string;
  is_current: boolean;
  companyId: string;
  startYear: number;
  endYear: number | null;
}

export interface PersonRecord {
  docid: string;
  index: number;
  firstname: string;
  lastname: string;
  displayname: string;
  headline: string;
  city: string;
  region: string;
  country: string;
  location: string;
  businessEmail: string | null;
  altEmails: string[];
  phones: { fullphone: string; phone_type: string }[];
  social: Record<string, { url: string; followers: number }>;
  organizations: Organization[];
  experienceYears: number;
  school: string;
  interests: string[];
  /** Lower-case text searched by person search. */
  searchText: string;
}

export const normEmail = (s: string) => s.trim().toLowerCase();
export const normPhone = (s: string) => s.replace(/\D/g, '').replace(/^00/, '');
/** Profile URLs compare without scheme, www, query, fragment or trailing slash. */
export const normUrl = (s: string) =>
  s
    .trim()
    .toLowerCase()
    .replace(/^[a-z]+:\/\//, '')
    .replace(/^www\./, '')
    .replace(/[?#].*$/, '')
    .replace(/\/+$/, '');
export const normName = (s: string) => s.trim().toLowerCase().replace(/\s+/g, ' ');
export const normDomain = (s: string) => normUrl(s).split('/')[0] ?? '';
