// Whitespace around parameter values: trimmed before validation at every edge (one rule, the
// one duplicate detection and the cache compare by), reported per parameter; the emulator judges
// values as sent.
import { describe, expect, it } from 'vitest';
import { normalisedParams } from '../../../src/batch/normalise.js';
import { getEndpoint, trimParams, validateInput } from '../../../src/contract/index.js';

const enrichment = getEndpoint('person_enrichment');

describe('validateInput trims the values it checks', () => {
  it('an email, a URL and a name with spaces, tabs or line ends around them are valid, and named as trimmed', () => {
    const v = validateInput(enrichment, {
      email: '  ada@example.com\t',
      social_media_url: '\nhttps://linkedin.com/in/ada ',
      name: ' Ada Lovelace ',
      lookup_mode: 'fast',
      required_fields: [' firstname', 'lastname '],
    });
    expect(v).toEqual({
      ok: true,
      value: {
        email: 'ada@example.com',
        social_media_url: 'https://linkedin.com/in/ada',
        name: 'Ada Lovelace',
        lookup_mode: 'fast',
        required_fields: ['firstname', 'lastname'],
      },
      trimmed: ['email', 'social_media_url', 'name', 'required_fields'],
    });
  });

  it('nothing to trim: nothing named; spaces inside a value stay', () => {
    expect(validateInput(enrichment, { email: 'ada@example.com', name: 'Ada  King' })).toEqual({
      ok: true,
      value: { email: 'ada@example.com', name: 'Ada  King' },
      trimmed: [],
    });
  });

  it('a value of spaces alone is an empty value, refused as one', () => {
    const v = validateInput(enrichment, { email: '   ' });
    expect(v.ok).toBe(false);
  });

  it('trims inside free-form filters too, keys as they are', () => {
    expect(
      trimParams({ custom_filters: { ' titles ': [' CTO '] }, limit: 5, exact_match: true }),
    ).toEqual({
      value: { custom_filters: { ' titles ': ['CTO'] }, limit: 5, exact_match: true },
      trimmed: ['custom_filters'],
    });
  });

  it('the emulator (trim: false) refuses an email with spaces around it, as sent', () => {
    const v = validateInput(enrichment, { email: ' ada@example.com ' }, { trim: false });
    expect(v).toEqual({
      ok: false,
      problems: [{ field: 'email', message: 'must be an email address' }],
    });
  });

  it('what is sent and what duplicate detection and the cache compare follow one rule', () => {
    const spaced = { email: '\u00a0ada@example.com\u2003', name: '\tAda ' };
    const v = validateInput(enrichment, spaced);
    expect(v.ok && normalisedParams(v.value)).toBe(normalisedParams(spaced));
  });
});
