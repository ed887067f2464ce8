import { describe, expect, it } from 'vitest';
import {
  applySearchTierRules,
  contactFlags,
  resolveSearchPaging,
} from '../../../src/contract/validate.js';

describe('resolveSearchPaging', () => {
  it('defaults to limit 10, offset 0', () => {
    expect(resolveSearchPaging({})).toEqual({ limit: 10, offset: 0 });
  });
  it('converts page to offset when offset is omitted', () => {
    expect(resolveSearchPaging({ page: 1 })).toEqual({ limit: 10, offset: 0 });
    expect(resolveSearchPaging({ page: 3 })).toEqual({ limit: 10, offset: 20 });
    expect(resolveSearchPaging({ page: 4, limit: 25 })).toEqual({ limit: 25, offset: 75 });
  });
  it('an explicit offset wins over page', () => {
    expect(resolveSearchPaging({ page: 5, offset: 7, limit: 20 })).toEqual({
      limit: 20,
      offset: 7,
    });
    expect(resolveSearchPaging({ page: 5, offset: 0 })).toEqual({ limit: 10, offset: 0 });
  });
});

describe('applySearchTierRules', () => {
  it('type defaults to premium and keeps the toggles', () => {
    expect(applySearchTierRules({ query: 'q', insights: true, high_freshness: true })).toEqual({
      query: 'q',
      insights: true,
      high_freshness: true,
      type: 'premium',
    });
  });
  it('light forces insights and high_freshness off', () => {
    expect(
      applySearchTierRules({
        type: 'light',
        insights: true,
        high_freshness: true,
        profile_scoring: true,
      }),
    ).toEqual({
      type: 'light',
      insights: false,
      high_freshness: false,
      profile_scoring: true,
    });
    expect(applySearchTierRules({ type: 'light' })).toEqual({
      type: 'light',
      insights: false,
      high_freshness: false,
    });
  });
  it('medium keeps the toggles', () => {
    expect(applySearchTierRules({ type: 'medium', insights: true })).toEqual({
      type: 'medium',
      insights: true,
    });
  });
});

describe('contactFlags', () => {
  it('nothing asked, nothing shown', () => {
    expect(contactFlags({})).toEqual({ emails: false, phones: false });
  });
  it('enrich_results asks for both when the explicit flags are omitted', () => {
    expect(contactFlags({ enrich_results: true })).toEqual({ emails: true, phones: true });
  });
  it('explicit flags win over enrich_results', () => {
    expect(contactFlags({ enrich_results: true, show_emails: false })).toEqual({
      emails: false,
      phones: true,
    });
    expect(contactFlags({ enrich_results: false, show_phone_numbers: true })).toEqual({
      emails: false,
      phones: true,
    });
  });
});
