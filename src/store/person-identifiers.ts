// The identifiers of people that a stored item names, as the erasure subjects the store keeps
// beside it (keyed HMACs of these texts, see sealer.ts): emails, profile and other URLs, phone
// numbers, and a name together with a company. They are taken from a request's parameters
// (named fields, and any email, URL or phone number inside free text such as a question), from
// a found result (a profile's emails, profile URLs, phone numbers, its name with each of its
// organisations) and from an input row's cells. An erasure request normalises what it is given
// the same way, so any spelling finds the same subjects. Pure: no I/O.
import { findPhoneNumbersInText, parsePhoneNumberFromString } from 'libphonenumber-js';
import normalizeUrl from 'normalize-url';
import { URL_OPTIONS } from '../batch/normalise.js';

/** Parameters and fields that hold an email address or a phone number. */
const EMAIL_KEYS = new Set(['email', 'work_email', 'personal_email', 'best_business_email']);
const EMAIL_LIST_KEYS = new Set(['altemails', 'emails']);
const PHONE_KEYS = new Set(['phone', 'mobile', 'fullphone', 'phone_number']);
/** Fields that name a person, and those that name the company a person works at. */
const NAME_KEYS = [
  'name',
  'person_name',
  'full_name',
  'fullname',
  'displayname',
  'display_name',
] as const;
const NAME_PARTS: [string, string][] = [
  ['firstname', 'lastname'],
  ['first_name', 'last_name'],
];
const COMPANY_KEYS = [
  'company',
  'company_name',
  'current_company',
  'employer',
  'organization',
  'organisation',
] as const;
/** Lists of a person's organisations or positions: each item's company name. */
const COMPANY_LIST_KEYS = ['organizations', 'organisations', 'experience', 'positions', 'jobs'];
const COMPANY_ITEM_KEYS = ['name', 'company', 'company_name', 'organization'];
/** Keys that make a record one that may name a person (its names are only looked for then). */
const NAME_OR_PART = new Set<string>([...NAME_KEYS, ...NAME_PARTS.flat()]);
/** Legal forms left out of a company's name, so "Engines Ltd" and "Engines" are one company. */
const LEGAL_FORMS = new Set([
  'inc',
  'incorporated',
  'ltd',
  'limited',
  'llc',
  'llp',
  'plc',
  'gmbh',
  'ag',
  'sa',
  'sas',
  'sarl',
  'bv',
  'nv',
  'corp',
  'corporation',
  'co',
  'company',
]);

const EMAIL_IN_TEXT = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
const URL_IN_TEXT = /\bhttps?:\/\/[^\s<>"'()[\]{}]+/gi;
/** A URL written without its scheme: a host name, then a path (a bare domain is no profile). */
const BARE_URL_IN_TEXT = /(?<![@\w.-])(?:[a-z0-9-]+\.)+[a-z]{2,}\/[^\s<>"'()[\]{}]+/gi;

/** An email address as lookups take it: trimmed, lower-cased. */
export const emailIdentifier = (raw: string): string => raw.trim().toLowerCase();

/** A URL as lookups take it: no scheme, no `www.`, no trailing slash or fragment, sorted query. */
export function urlIdentifier(raw: string): string {
  const v = raw.trim().replace(/[.,;:!?]+$/, '');
  try {
    return normalizeUrl(v, URL_OPTIONS);
  } catch {
    return v;
  }
}

/**
 * A phone number: E.164 when it parses (it needs its +country code), else its digits (seven at
 * least, or none: no phone number).
 */
export function phoneIdentifier(raw: string): string | undefined {
  const parsed = parsePhoneNumberFromString(raw.trim());
  if (parsed?.isPossible()) return `tel:${parsed.number}`;
  const digits = raw.replace(/[^\d+]/g, '');
  return /\d{7,}/.test(digits) ? `tel:${digits}` : undefined;
}

/** Letters and digits only, accents and case folded, words one space apart. */
const folded = (text: string): string =>
  text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

/** A company's name without its legal form (a domain keeps its dots as spaces: another name). */
function companyName(raw: string): string {
  const words = folded(raw).split(' ').filter(Boolean);
  while (words.length > 1 && LEGAL_FORMS.has(words[words.length - 1])) words.pop();
  return words.join(' ');
}

/** A person's name at a company; undefined when either is empty once folded. */
export function personAtCompanyIdentifier(name: string, company: string): string | undefined {
  const n = folded(name);
  const c = companyName(company);
  return n && c ? `person:${n}@${c}` : undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const texts = (v: unknown): string[] =>
  typeof v === 'string' ? [v] : Array.isArray(v) ? v.filter((x) => typeof x === 'string') : [];

/** The names a record gives a person (one field, or first and last name together). */
function namesIn(obj: Record<string, unknown>): string[] {
  const names = NAME_KEYS.flatMap((k) => texts(obj[k]));
  for (const [first, last] of NAME_PARTS)
    if (typeof obj[first] === 'string' && typeof obj[last] === 'string')
      names.push(`${obj[first]} ${obj[last]}`);
  return names;
}

/** The companies a record names for its person: its own fields and its organisations. */
function companiesIn(obj: Record<string, unknown>): string[] {
  const out = COMPANY_KEYS.flatMap((k) => texts(obj[k]));
  for (const listKey of COMPANY_LIST_KEYS) {
    const list = obj[listKey];
    if (!Array.isArray(list)) continue;
    for (const item of list)
      if (isObject(item)) out.push(...COMPANY_ITEM_KEYS.flatMap((k) => texts(item[k])));
  }
  return out;
}

/**
 * Every email, URL and phone number written inside a text. Each pattern runs only on a text that
 * holds its mark (`@`, `/`, `+` and a digit): most cells hold none, and loading stays fast.
 */
function inText(text: string, add: (identifier: string | undefined) => void): void {
  if (text.includes('@')) for (const m of text.matchAll(EMAIL_IN_TEXT)) add(emailIdentifier(m[0]));
  if (text.includes('/')) {
    for (const m of text.matchAll(URL_IN_TEXT)) add(urlIdentifier(m[0]));
    for (const m of text.matchAll(BARE_URL_IN_TEXT)) add(urlIdentifier(m[0]));
  }
  if (/\+\d/.test(text))
    for (const found of findPhoneNumbersInText(text)) add(`tel:${found.number.number}`);
}

/**
 * The identifiers the given values name (a request's parameters, a result, a row's cells), each
 * once, sorted: what an erasure request for any of them must find.
 */
export function identifiersOf(...values: unknown[]): string[] {
  const out = new Set<string>();
  const add = (identifier: string | undefined) => {
    if (identifier && identifier.length > 0) out.add(identifier);
  };
  // A row's parameters, key and cells repeat the same values: each is read once.
  const seen = new Set<string>();
  const visit = (key: string, value: unknown, depth: number): void => {
    if (depth > 32) return;
    if (typeof value === 'string') {
      const v = value.trim();
      if (!v || seen.has(`${key}\0${v}`)) return;
      seen.add(`${key}\0${v}`);
      if (EMAIL_KEYS.has(key) || EMAIL_LIST_KEYS.has(key)) add(emailIdentifier(v));
      else if (PHONE_KEYS.has(key)) add(phoneIdentifier(v));
      else if (key.endsWith('_url') || /^https?:\/\//i.test(v)) add(urlIdentifier(v));
      inText(v, add);
      return;
    }
    if (Array.isArray(value)) {
      for (const item of value) visit(key, item, depth + 1);
      return;
    }
    if (!isObject(value)) return;
    let named = false;
    for (const k in value) {
      if (NAME_OR_PART.has(k)) named = true;
      visit(k.toLowerCase(), value[k], depth + 1);
    }
    if (!named) return;
    const companies = companiesIn(value);
    if (companies.length === 0) return;
    for (const name of namesIn(value))
      for (const company of companies) {
        // A row's parameters and cells name the same person at the same company: folded once.
        if (seen.has(`${name}\0@\0${company}`)) continue;
        seen.add(`${name}\0@\0${company}`);
        add(personAtCompanyIdentifier(name, company));
      }
  };
  for (const value of values) visit('', value, 0);
  return [...out].sort();
}

/** What one erasure request names: the person's identifiers, as the person or operator gives them. */
export interface ErasureIdentifiers {
  emails?: readonly string[];
  urls?: readonly string[];
  phones?: readonly string[];
  /** A name at a company: both are needed (a name alone names many people). */
  people?: readonly { name: string; company: string }[];
}

/** The identifiers an erasure request looks for, normalised as identifiersOf normalises them. */
export function requestedIdentifiers(req: ErasureIdentifiers): string[] {
  const out = new Set<string>();
  for (const e of req.emails ?? []) out.add(emailIdentifier(e));
  for (const u of req.urls ?? []) out.add(urlIdentifier(u));
  for (const p of req.phones ?? []) {
    const id = phoneIdentifier(p);
    if (id) out.add(id);
  }
  for (const { name, company } of req.people ?? []) {
    const id = personAtCompanyIdentifier(name, company);
    if (id) out.add(id);
  }
  return [...out].filter(Boolean).sort();
}
