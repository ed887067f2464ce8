// Building blocks shared by the endpoint input schemas: one definition per documented parameter
// shape, so every endpoint states a field's type, range and enum the same way.
import { z } from 'zod';

export const NEWSFEED_PLATFORMS = [
  'linkedin',
  'twitter',
  'instagram',
  'github',
  'facebook',
] as const;
export const LOOKUP_FIELDS = [
  'displayname',
  'firstname',
  'lastname',
  'best_work_email',
  'best_personal_email',
  'mobile',
  'address',
  'location',
  'headline',
  'current_company',
  'current_title',
  'photo_url',
] as const;
export const SEARCH_TYPES = ['light', 'medium', 'premium'] as const;
export const LOOKUP_MODES = ['fast', 'balanced', 'deep'] as const;

export const uri = z.url({ message: 'must be an absolute URI' });
// RFC 5321: a local part of at most 64 octets, a path of at most 256 (254 for the address).
export const email = z
  .email({
    message: 'must be an email address',
    abort: true,
    // zod's default, with domain labels of 1-63 characters that neither start nor end in '-'
    // (RFC 1035), so the pattern and the `email` format describe the same addresses.
    pattern:
      /^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-.]*)[A-Za-z0-9_+-]@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/,
  })
  .max(254, { message: 'must be at most 254 characters (RFC 5321)' })
  .regex(/^[^@]{1,64}@/, {
    message: 'must have a local part of at most 64 characters (RFC 5321)',
  })
  .meta({ format: 'email' });

/** Bounds of a free-form filter object (custom_filters, exclude), so one search stays cheap. */
export const MAX_FILTER_KEYS = 50;
export const MAX_FILTER_VALUES = 1000;

/** Values (leaves and list items) in a filter object, counted without recursion up to a bound. */
function filterValueCount(v: object, bound: number): number {
  const stack: unknown[] = [...Object.values(v)];
  let n = 0;
  while (stack.length > 0 && n <= bound) {
    const x = stack.pop();
    if (x !== null && typeof x === 'object') stack.push(...Object.values(x));
    else n++;
  }
  return n;
}

export const filterObject = z.record(z.string(), z.unknown()).superRefine((v, ctx) => {
  if (Object.keys(v).length > MAX_FILTER_KEYS)
    ctx.addIssue({ code: 'custom', message: `must have at most ${MAX_FILTER_KEYS} keys` });
  else if (filterValueCount(v, MAX_FILTER_VALUES) > MAX_FILTER_VALUES)
    ctx.addIssue({
      code: 'custom',
      message: `must hold at most ${MAX_FILTER_VALUES} values in all`,
    });
});
export const nonEmpty = z.string().trim().min(1, { message: 'must not be empty' });
// Length only: the full delivery rules (checkCallbackUrl) depend on a development switch.
export const callbackUrl = z
  .string({ message: 'must be a string' })
  .min(1, { message: 'must not be empty' })
  .max(1024, { message: 'must be at most 1024 characters' })
  .meta({ format: 'uri' });

/** `all`, or a list of the five platforms. */
export const newsfeed = z.union(
  [
    z.literal('all'),
    z.array(z.enum(NEWSFEED_PLATFORMS)).min(1, { message: 'must name at least one platform' }),
  ],
  { message: `must be "all" or a list of ${NEWSFEED_PLATFORMS.join(', ')}` },
);

/** YYYY-MM-DD that is also a real calendar date. */
export const isoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, { message: 'must be a date of the form YYYY-MM-DD', abort: true })
  .refine(
    (s) => {
      const d = new Date(`${s}T00:00:00Z`);
      return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
    },
    { message: 'must be a real calendar date' },
  )
  .meta({ format: 'date' });

export const int = (min: number, max?: number) => {
  let s = z
    .number({ message: 'must be a number' })
    .int({ message: 'must be an integer' })
    .min(min, {
      message: `must be at least ${min}`,
    });
  if (max !== undefined) s = s.max(max, { message: `must be at most ${max}` });
  return s;
};

/** The alias pairs of the spec: the alias on the left means the canonical field on the right. */
export const ALIASES: Readonly<Record<string, string>> = {
  linkedin_url: 'social_media_url',
  keywords: 'query',
};
