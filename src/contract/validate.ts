// Validation of endpoint inputs into a value or a list of problems that name their field, plus
// the person-search rules that reshape a valid input (page to offset, the light-tier rule).
import type { z } from 'zod';
import type { EndpointDef } from './catalogue.js';
import { aliasesOfShape } from './inputs.js';

export interface InputProblem {
  /** Dotted path of the field, or '' for a rule about the whole input. */
  field: string;
  message: string;
}

export type Validation =
  { ok: true; value: Record<string, unknown> } | { ok: false; problems: InputProblem[] };

/** The value at a path of the input, to tell a missing field from a wrong one. */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const k of path) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

/** Zod issues as problems. Pass the input so that a missing field reads "is required". */
export function problemsOf(error: z.ZodError, input?: unknown): InputProblem[] {
  return error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') {
      return { field: issue.keys.join(', '), message: 'is not a parameter of this endpoint' };
    }
    const field = issue.path.map(String).join('.');
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

export function validateInput(endpoint: EndpointDef, input: unknown): Validation {
  const given = input ?? {};
  if (nestsDeeperThan(given)) return { ok: false, problems: [TOO_DEEP] };
  const parsed = endpoint.input.safeParse(given);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, problems: problemsOf(parsed.error, given) };
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
