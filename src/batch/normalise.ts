// What a call's parameters are once normalised: the identity the store seals as a lookup key
// (the result cache, and a batch's duplicate rows: rows whose parameters are the same once
// normalised share one call); erasure subjects normalise URLs the same way. Pure.
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import normalizeUrl from 'normalize-url';
import { trimSurrounding } from '../contract/trim.js';

/** Parameters that hold an email address, a phone number, a URL or a domain. */
const EMAILS = new Set(['email', 'work_email', 'personal_email']);
const PHONES = new Set(['phone', 'mobile']);
const DOMAINS = new Set(['domain', 'company_domain']);

/** How a URL is normalised for lookups and erasure subjects (scheme, www., trailing /, fragment, query order). */
export const URL_OPTIONS = {
  stripProtocol: true,
  stripWWW: true,
  removeTrailingSlash: true,
  stripHash: true,
  sortQueryParameters: true,
} as const;

function normalisedString(name: string, raw: string): string {
  // Trimmed as validation trims what is sent: one rule.
  const v = trimSurrounding(raw);
  if (EMAILS.has(name)) return v.toLowerCase();
  if (PHONES.has(name)) return parsePhoneNumberFromString(v)?.number ?? v.replace(/[\s().-]/g, '');
  if (DOMAINS.has(name)) return v.toLowerCase().replace(/^www\./, '');
  if (/^https?:\/\//i.test(v) || name.endsWith('_url')) {
    try {
      return normalizeUrl(v, URL_OPTIONS);
    } catch {
      return v;
    }
  }
  // Names, companies, questions: the same words, however spaced.
  return v.replace(/\s+/g, ' ');
}

function normalised(name: string, value: unknown): unknown {
  if (typeof value === 'string') return normalisedString(name, value);
  if (Array.isArray(value)) return value.map((v) => normalised(name, v));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort())
      out[k] = normalised(k, (value as Record<string, unknown>)[k]);
    return out;
  }
  return value;
}

/**
 * The parameters once normalised, as one JSON text (keys sorted): what a lookup key hashes.
 * Emails trimmed and lower-cased, phone numbers in E.164 where they parse, URLs normalised
 * (scheme, www., trailing slash, fragment, query order), domains lower-cased, other text trimmed
 * with its spaces collapsed.
 */
export function normalisedParams(params: Record<string, unknown>): string {
  return JSON.stringify(normalised('', params));
}
