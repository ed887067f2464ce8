// Validation of endpoint inputs into a value or a list of problems that name their field, plus
// the person-search rules that reshape a valid input (page to offset, the light-tier rule).
import type { z } from 'zod';
import { ENDPOINTS, type EndpointDef } from './catalogue.js';
import { aliasesOfShape } from './inputs.js';
import { trimParams } from './trim.js';

export interface InputProblem {
  /** Dotted path of the field, or '' for a rule about the whole input. */
  field: string;
  message: string;
}

export type Validation =
  | {
      ok: true;
      value: Record<string, unknown>;
      /** Parameters whose value had whitespace around it, now trimmed (trim.ts). */
      trimmed: string[];
    }
  | { ok: false; problems: InputProblem[] };

/** The value at a path of the input, to tell a missing field from a wrong one. */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const k of path) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

/** The parts of a schema a value may match (wrappers, pipes, unions and intersections opened). */
function alternativesOf(schema: z.core.$ZodType): z.core.$ZodType[] {
  const def = schema._zod.def as unknown as Record<string, unknown> & { type: string };
  const inner = (k: string) => alternativesOf(def[k] as z.core.$ZodType);
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      return inner('innerType');
    case 'pipe':
      return [...inner('in'), ...inner('out')];
    case 'intersection':
      return [...inner('left'), ...inner('right')];
    case 'union':
      return (def.options as z.core.$ZodType[]).flatMap(alternativesOf);
    case 'lazy':
      return alternativesOf((def.getter as () => z.core.$ZodType)());
    default:
      return [schema];
  }
}

/**
 * The leading segments of an issue's path that the schema names (an object's fields, an array's
 * positions); it stops at the first it does not (a record's key, a key of a free-form value),
 * which came from the input and may be personal data.
 */
export function knownPathOf(schema: z.core.$ZodType, path: readonly PropertyKey[]): PropertyKey[] {
  const known: PropertyKey[] = [];
  let at = [schema];
  for (const segment of path) {
    const next: z.core.$ZodType[] = [];
    for (const alt of at.flatMap(alternativesOf)) {
      const def = alt._zod.def as unknown as Record<string, unknown> & { type: string };
      const shape = def.shape as Record<string, z.core.$ZodType> | undefined;
      if (
        def.type === 'object' &&
        typeof segment === 'string' &&
        shape &&
        Object.hasOwn(shape, segment)
      )
        next.push(shape[segment]);
      else if (def.type === 'array' && typeof segment === 'number')
        next.push(def.element as z.core.$ZodType);
      else if (def.type === 'tuple' && typeof segment === 'number') {
        const item =
          (def.items as z.core.$ZodType[])[segment] ?? (def.rest as z.core.$ZodType | null);
        if (item) next.push(item);
      }
    }
    if (next.length === 0) break;
    known.push(segment);
    at = next;
  }
  return known;
}

let vocabulary: ReadonlySet<string> | undefined;

/**
 * Every field name of the catalogue's inputs: words of the contract, never of a file, so an
 * unknown key that is one of them may be named. Built on first use (the catalogue imports this
 * module's neighbours).
 */
function parameterNames(): ReadonlySet<string> {
  vocabulary ??= new Set(
    ENDPOINTS.flatMap((e) =>
      alternativesOf(e.input).flatMap((alt) => {
        const def = alt._zod.def as unknown as { type: string; shape?: Record<string, unknown> };
        return def.type === 'object' && def.shape ? Object.keys(def.shape) : [];
      }),
    ),
  );
  return vocabulary;
}

/**
 * An unknown key's problems: a parameter name of the catalogue is named, the rest counted (or
 * every key named, for a server answering a caller about its own request).
 */
function unknownKeyProblems(
  field: string,
  keys: readonly string[],
  nameAll: boolean,
): InputProblem[] {
  const named = nameAll ? [...keys] : keys.filter((k) => parameterNames().has(k));
  const others = keys.length - named.length;
  const problems = named.map((k) => ({
    field: field ? `${field}.${k}` : k,
    message: 'is not a parameter of this endpoint',
  }));
  if (others > 0) {
    const what = named.length > 0 ? ' other' : '';
    problems.push(
      field
        ? { field, message: `has ${others}${what} unknown key${others === 1 ? '' : 's'}` }
        : {
            field,
            message:
              others === 1
                ? `1${what} key is not a parameter of this endpoint`
                : `${others}${what} keys are not parameters of this endpoint`,
          },
    );
  }
  return problems;
}

/**
 * Zod issues as problems. Pass the input so that a missing field reads "is required". Problems
 * quote nothing of the input: an unknown key is named only when it is a parameter name of the
 * catalogue (else counted), and a path keeps only the segments `schema` names. The emulator's MCP
 * tools answer a caller about the arguments it sent, as the service does: `nameUnknownKeys`
 * names every unknown argument there (never for rows read from a file).
 */
export function problemsOf(
  error: z.ZodError,
  input: unknown,
  schema: z.core.$ZodType,
  opts: { nameUnknownKeys?: boolean } = {},
): InputProblem[] {
  return error.issues.flatMap((issue) => {
    const known = knownPathOf(schema, issue.path);
    const field = known.map(String).join('.');
    if (issue.code === 'unrecognized_keys')
      return unknownKeyProblems(field, issue.keys, opts.nameUnknownKeys === true);
    let message = issue.message;
    // Zod does not keep the input in its issues (no values leak), so look the field up.
    if (
      issue.code === 'invalid_type' &&
      input !== undefined &&
      issue.path.length > 0 &&
      valueAt(input, issue.path) === undefined
    ) {
      message = 'is required';
    }
    return { field, message };
  });
}

/** One line naming every problem, for CLI output and 400 messages. PII-free: values are not echoed. */
export function formatProblems(problems: readonly InputProblem[]): string {
  return problems.map((p) => (p.field ? `${p.field} ${p.message}` : p.message)).join('; ');
}

/** Objects and arrays nest at most this deep in an input (free-form filters included). */
export const MAX_INPUT_DEPTH = 32;

/**
 * Whether a value nests deeper than `max` levels, measured without recursion so that a hostile
 * document cannot overflow the stack; work stops at the first level past the bound.
 */
export function nestsDeeperThan(value: unknown, max = MAX_INPUT_DEPTH): boolean {
  let level: unknown[] = [value];
  for (let depth = 0; level.length > 0; depth++) {
    const next: unknown[] = [];
    for (const v of level) {
      if (typeof v !== 'object' || v === null) continue;
      if (depth >= max) return true;
      for (const child of Array.isArray(v) ? v : Object.values(v)) next.push(child);
    }
    level = next;
  }
  return false;
}

export const TOO_DEEP: InputProblem = {
  field: '',
  message: `nests objects or arrays deeper than ${MAX_INPUT_DEPTH} levels`,
};

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * An input checked against its endpoint, after the whitespace around its text values is trimmed
 * (what every edge sends, and what duplicate detection and the cache compare). The emulator
 * passes `trim: false`: it judges values as sent, so a test shows that they were sent trimmed.
 */
export function validateInput(
  endpoint: EndpointDef,
  input: unknown,
  opts: { trim?: boolean } = {},
): Validation {
  const raw = input ?? {};
  if (nestsDeeperThan(raw)) return { ok: false, problems: [TOO_DEEP] };
  const { value: given, trimmed } =
    isPlainObject(raw) && opts.trim !== false ? trimParams(raw) : { value: raw, trimmed: [] };
  const parsed = endpoint.input.safeParse(given);
  if (parsed.success) return { ok: true, value: parsed.data, trimmed };
  return { ok: false, problems: problemsOf(parsed.error, given, endpoint.input) };
}

/** The alias pairs an endpoint documents (alias -> canonical), for `canonicalInput`. */
export function inputAliases(endpoint: EndpointDef): Record<string, string> {
  const shape = (endpoint.input as { shape?: Record<string, unknown> }).shape;
  return shape ? aliasesOfShape(Object.keys(shape)) : {};
}

export const DEFAULT_SEARCH_LIMIT = 10;
export const MAX_SEARCH_OFFSET = 999;

/** Legacy `page` becomes an offset when offset is omitted: offset = (page - 1) * limit. */
export function resolveSearchPaging(input: { limit?: unknown; offset?: unknown; page?: unknown }): {
  limit: number;
  offset: number;
} {
  const limit = typeof input.limit === 'number' ? input.limit : DEFAULT_SEARCH_LIMIT;
  if (typeof input.offset === 'number') return { limit, offset: input.offset };
  if (typeof input.page === 'number') return { limit, offset: (input.page - 1) * limit };
  return { limit, offset: 0 };
}

/** For type=light, insights and high_freshness are forced off; the default type is premium. */
export function applySearchTierRules<T extends Record<string, unknown>>(
  input: T,
): T & { type: string } {
  const type = typeof input.type === 'string' ? input.type : 'premium';
  if (type !== 'light') return { ...input, type };
  return { ...input, type, insights: false, high_freshness: false };
}

/** enrich_results asks for both contact kinds when the explicit flags are omitted. */
export function contactFlags(input: Record<string, unknown>): { emails: boolean; phones: boolean } {
  const enrich = input.enrich_results === true;
  return {
    emails: typeof input.show_emails === 'boolean' ? input.show_emails : enrich,
    phones: typeof input.show_phone_numbers === 'boolean' ? input.show_phone_numbers : enrich,
  };
}
