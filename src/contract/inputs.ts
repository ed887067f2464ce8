// Input schemas of every endpoint, built from the documented parameter tables. Core endpoints are
// strict (an unknown parameter is an error that names it); endpoints whose payloads the interface
// does not fully show accept further fields as given.
import { z } from 'zod';
import {
  ALIASES,
  LOOKUP_FIELDS,
  LOOKUP_MODES,
  SEARCH_TYPES,
  callbackUrl,
  email,
  filterObject,
  int,
  isoDate,
  newsfeed,
  nonEmpty,
  uri,
} from './params.js';

type Shape = Record<string, z.ZodType>;

/** One way to identify the subject: every field of the group must be present. */
export type IdentityGroup = readonly string[];

export interface InputRules {
  /** Fields that must always be present. */
  required?: readonly string[];
  /** At least one group must be fully present (aliases count for their canonical field). */
  oneOf?: readonly IdentityGroup[];
  /** Strict objects reject unknown parameters; loose ones pass them through. */
  strict?: boolean;
}

/** The aliases an input shape speaks: both the alias and its canonical field are parameters of it. */
export function aliasesOfShape(keys: Iterable<string>): Record<string, string> {
  const set = new Set(keys);
  const out: Record<string, string> = {};
  for (const [alias, canonical] of Object.entries(ALIASES)) {
    if (set.has(alias) && set.has(canonical)) out[alias] = canonical;
  }
  return out;
}

const has = (input: Record<string, unknown>, k: string) =>
  input[k] !== undefined && input[k] !== null && input[k] !== '';

const present = (
  input: Record<string, unknown>,
  field: string,
  aliases: Record<string, string>,
): boolean =>
  has(input, field) ||
  Object.entries(aliases).some(([alias, canonical]) => canonical === field && has(input, alias));

export const describeGroup = (g: IdentityGroup) => g.join('+');

/**
 * The presence rules as JSON Schema (for the OpenAPI document and the MCP tool list): fields
 * always required under `required`, and each "one of" rule (a field with an alias is one such
 * rule too) under `anyOf`, several of them under `allOf`.
 */
export function rulesAsJsonSchema(
  rules: InputRules,
  aliases: Readonly<Record<string, string>>,
): Record<string, unknown> {
  const names = (field: string) => [
    field,
    ...Object.entries(aliases)
      .filter(([, canonical]) => canonical === field)
      .map(([alias]) => alias),
  ];
  // Every way to satisfy a group: one name (field or alias) for each of its fields.
  const ways = (group: IdentityGroup): string[][] =>
    group.reduce<string[][]>(
      (acc, field) => acc.flatMap((way) => names(field).map((n) => [...way, n])),
      [[]],
    );
  const out: Record<string, unknown> = {};
  const plain = (rules.required ?? []).filter((f) => names(f).length === 1);
  if (plain.length > 0) out.required = plain;
  const choices: Record<string, unknown>[] = [];
  for (const f of rules.required ?? [])
    if (names(f).length > 1) choices.push({ anyOf: ways([f]).map((w) => ({ required: w })) });
  if (rules.oneOf) choices.push({ anyOf: rules.oneOf.flatMap(ways).map((w) => ({ required: w })) });
  if (choices.length === 1) Object.assign(out, choices[0]);
  else if (choices.length > 1) out.allOf = choices;
  return out;
}

type WithCallback<S extends Shape> = S & { callback_url: z.ZodOptional<typeof callbackUrl> };

/**
 * What an endpoint's schema takes and gives, as types: its documented parameters (each optional
 * or not as the schema says), and for a loosely documented endpoint any further field.
 */
export type InputSchema<S extends Shape, Loose extends boolean = false> = z.ZodType<
  z.output<z.ZodObject<WithCallback<S>>> & (Loose extends true ? Record<string, unknown> : unknown),
  z.input<z.ZodObject<WithCallback<S>>> & (Loose extends true ? Record<string, unknown> : unknown)
>;

export function buildInputSchema<S extends Shape>(
  shape: S,
  rules?: InputRules & { strict?: true },
): InputSchema<S>;
export function buildInputSchema<S extends Shape>(
  shape: S,
  rules: InputRules & { strict: false },
): InputSchema<S, true>;
export function buildInputSchema<S extends Shape>(
  shape: S,
  rules: InputRules = {},
): InputSchema<S, boolean> {
  const base = z.object({ ...shape, callback_url: callbackUrl.optional() });
  const obj = rules.strict === false ? base.loose() : base.strict();
  // An alias counts only where the endpoint documents the pair (keywords is /person/discover's own
  // field, not an alias of a query it does not take).
  const aliases = aliasesOfShape(Object.keys(shape));
  const checked = obj.meta(rulesAsJsonSchema(rules, aliases)).superRefine((raw, ctx) => {
    const input = raw as Record<string, unknown>;
    for (const [alias, canonical] of Object.entries(aliases)) {
      if (
        input[alias] !== undefined &&
        input[canonical] !== undefined &&
        input[alias] !== input[canonical]
      ) {
        ctx.addIssue({
          code: 'custom',
          path: [alias],
          message: `is an alias of ${canonical}; give one or the other, or the same value`,
        });
      }
    }
    for (const field of rules.required ?? []) {
      if (!present(input, field, aliases)) {
        ctx.addIssue({ code: 'custom', path: [field], message: 'is required' });
      }
    }
    if (rules.oneOf && !rules.oneOf.some((g) => g.every((f) => present(input, f, aliases)))) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: `needs at least one of: ${rules.oneOf.map(describeGroup).join(', ')}`,
      });
    }
  });
  return checked;
}

/**
 * Replace aliases by their canonical field, so downstream code reads one name. Pass the
 * endpoint's own aliases (`inputAliases`) where an alias name is also a field of some endpoint.
 */
export function canonicalInput<T extends Record<string, unknown>>(
  input: T,
  aliases: Readonly<Record<string, string>> = ALIASES,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...input };
  for (const [alias, canonical] of Object.entries(aliases)) {
    if (out[alias] !== undefined) {
      if (out[canonical] === undefined) out[canonical] = out[alias];
      delete out[alias];
    }
  }
  return out;
}

const str = nonEmpty.optional();
const bool = z.boolean({ message: 'must be true or false' }).optional();
const socialUrl = { social_media_url: uri.optional(), linkedin_url: uri.optional() };
const contact = { email: email.optional(), phone: str, ...socialUrl };

export const personSearchShape = {
  query: str,
  keywords: str,
  person_name: str,
  role: str,
  company_name: str,
  geography: str,
  tenure: str,
  college: str,
  exact_match: bool,
  custom_filters: filterObject.optional(),
  exclude: filterObject.optional(),
  docid_whitelist: z.array(nonEmpty).min(1).optional(),
  type: z
    .enum(SEARCH_TYPES, { message: `must be one of ${SEARCH_TYPES.join(', ')}` })
    .meta({ default: 'premium' })
    .optional(),
  limit: int(1, 100).meta({ default: 10 }).optional(),
  offset: int(0, 999).optional(),
  page: int(1).optional(),
  cursor: str,
  request_id: str,
  force_new: bool,
  show_emails: bool,
  show_phone_numbers: bool,
  require_emails: bool,
  require_phone_numbers: bool,
  require_phones_or_emails: bool,
  enrich_results: bool,
  profile_scoring: bool,
  insights: bool,
  high_freshness: bool,
  newsfeed: newsfeed.optional(),
} satisfies Shape;

// The interface's rule names exactly these five; the structured parts refine a search but do not
// satisfy the rule alone.
export const PERSON_SEARCH_REQUIRED_ONE_OF = [
  ['query'],
  ['custom_filters'],
  ['docid_whitelist'],
  ['cursor'],
  ['request_id'],
] as const;

/**
 * Legacy `page` becomes offset (page - 1) * limit when offset is omitted; that offset must still
 * lie within the documented 0-999.
 */
export function checkPageOffset(raw: unknown, ctx: z.RefinementCtx): void {
  const input = raw as { page?: number; offset?: number; limit?: number };
  if (input.page === undefined || input.offset !== undefined) return;
  const offset = (input.page - 1) * (input.limit ?? 10);
  if (offset > 999) {
    ctx.addIssue({
      code: 'custom',
      path: ['page'],
      message: 'gives an offset above 999 (offset = (page - 1) * limit)',
    });
  }
}

export const personSearchInput = buildInputSchema(personSearchShape, {
  strict: true,
  oneOf: PERSON_SEARCH_REQUIRED_ONE_OF,
}).superRefine(checkPageOffset);

export const personEnrichmentShape = {
  ...contact,
  name: str,
  company: str,
  city: str,
  lookup_mode: z
    .enum(LOOKUP_MODES, { message: `must be one of ${LOOKUP_MODES.join(', ')}` })
    .meta({ default: 'deep' })
    .optional(),
  newsfeed: newsfeed.optional(),
  force_organization_refresh: bool,
  lite_enrich: bool,
  strict_email_check: bool,
  probability_score: bool,
  ai_enhanced_search: bool,
  required_fields: z.array(nonEmpty).optional(),
} satisfies Shape;
export const PERSON_IDENTITY = [['email'], ['phone'], ['social_media_url'], ['name']] as const;

export const personEnrichmentInput = buildInputSchema(personEnrichmentShape, {
  strict: true,
  oneOf: PERSON_IDENTITY,
});

export const personEnrichInput = buildInputSchema(
  { ...contact, name: str },
  { strict: true, oneOf: PERSON_IDENTITY },
);

export const personLookupFieldsInput = buildInputSchema(
  {
    ...contact,
    name: str,
    company: str,
    company_domain: str,
    city: str,
    state: str,
    postal_code: str,
    location: str,
    fields: z
      .array(z.enum(LOOKUP_FIELDS, { message: `each must be one of ${LOOKUP_FIELDS.join(', ')}` }))
      .min(1)
      .optional(),
    profile_urls: z
      .array(
        z.string().regex(/^[a-z0-9]+(_[a-z0-9]+)*$/, { message: 'must be lowercase snake_case' }),
      )
      .optional(),
    probability_score: bool,
  },
  {
    strict: true,
    // The interface states no "at least one of" rule here; a lookup without any identifier
    // cannot be answered, so any one of the identifiers is required.
    oneOf: [
      ['email'],
      ['phone'],
      ['social_media_url'],
      ['name'],
      ['company'],
      ['company_domain'],
      ['city'],
      ['state'],
      ['postal_code'],
      ['location'],
    ],
  },
);

export const personNewsfeedInput = buildInputSchema(
  {
    ...socialUrl,
    limit: int(1, 1000).meta({ default: 10 }).optional(),
    posts_after: isoDate.optional(),
  },
  { strict: true, required: ['social_media_url'] },
);

export const personAskInput = buildInputSchema(
  { question: str, ...contact },
  { strict: true, required: ['question'], oneOf: [['email'], ['phone'], ['social_media_url']] },
);

export const companySearchInput = buildInputSchema(
  {
    industry: str,
    website_keyword: str,
    location: str,
    max_results: int(1, 50).optional(),
    validate_keyword: bool,
    validate_keyword_content: bool,
  },
  // The interface states no "at least one of" rule here; a search without any criterion is meaningless.
  { strict: true, oneOf: [['industry'], ['website_keyword'], ['location']] },
);

export const companyEnrichmentInput = buildInputSchema(
  { domain: str, email: email.optional(), phone: str, ...socialUrl },
  { strict: true, oneOf: [['domain'], ['email'], ['phone'], ['social_media_url']] },
);

/** Endpoints whose table names the identifying inputs but not the full payload. */
export function namedInputs(
  fields: readonly string[],
  oneOf: readonly IdentityGroup[],
  required: readonly string[] = [],
) {
  const shape: Shape = {};
  for (const f of fields) {
    if (f === 'email') shape.email = email.optional();
    else if (f === 'social_media_url') Object.assign(shape, socialUrl);
    // Types not stated: the plural names are read as lists.
    else if (f === 'accounts' || f === 'usernames' || f === 'social_media_urls')
      shape[f] = z.array(nonEmpty).min(1).optional();
    else shape[f] = str;
  }
  return buildInputSchema(shape, { strict: false, oneOf, required });
}

/** A free-form input still names something: an empty object is refused. */
const NOT_EMPTY = {
  check: (v: Record<string, unknown>) => Object.keys(v).length > 0,
  message: 'the input is empty; send at least one field',
};

/** Endpoints whose inputs the interface does not state: any non-empty object, plus callback_url. */
export const freeFormInput = buildInputSchema({}, { strict: false })
  .meta({ minProperties: 1 })
  .refine(NOT_EMPTY.check, { message: NOT_EMPTY.message });

/** Payload not shown by the interface: any non-empty object. */
export const feedbackInput = z
  .record(z.string(), z.unknown())
  .meta({ minProperties: 1 })
  .refine(NOT_EMPTY.check, { message: NOT_EMPTY.message });

// Query-string values arrive as text, hence the coercion; blanks and non-integers are refused.
const queryInt = (min: number, max: number) =>
  z
    .union([z.number(), z.string().trim().regex(/^\d+$/, { message: 'must be an integer' })], {
      message: 'must be an integer',
    })
    .transform(Number)
    .pipe(int(min, max));

export const usageQuery = z
  .object({
    month: queryInt(1, 12).optional(),
    year: queryInt(2020, 2030).optional(),
  })
  .strict();
