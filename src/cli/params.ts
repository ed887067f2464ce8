// Endpoint parameters from command-line flags, typed by the endpoint's zod schema: numbers,
// booleans, arrays (comma lists or repeated flags) and JSON objects. Also per-endpoint help text.
import { z } from 'zod';
import type { EndpointDef } from '../contract/index.js';
import { jsonSchemaOf } from '../emulator/json-schema.js';
import { UsageError } from './output.js';

type Kind = 'string' | 'number' | 'boolean' | 'array' | 'object' | 'any';

/** The zod object shape behind an endpoint's input, when there is one. */
export function shapeOf(endpoint: EndpointDef): Record<string, z.ZodType> | undefined {
  const s = endpoint.input as unknown;
  return s instanceof z.ZodObject ? s.shape : undefined;
}

function unwrap(t: z.ZodType): z.ZodType {
  let cur: z.ZodType = t;
  for (let i = 0; i < 8; i++) {
    if (
      cur instanceof z.ZodOptional ||
      cur instanceof z.ZodNullable ||
      cur instanceof z.ZodDefault
    ) {
      cur = (cur as unknown as { unwrap(): z.ZodType }).unwrap();
    } else break;
  }
  return cur;
}

function kindOf(t: z.ZodType | undefined): Kind {
  if (!t) return 'any';
  const u = unwrap(t);
  if (u instanceof z.ZodNumber) return 'number';
  if (u instanceof z.ZodBoolean) return 'boolean';
  if (u instanceof z.ZodArray) return 'array';
  if (u instanceof z.ZodObject || u instanceof z.ZodRecord) return 'object';
  if (u instanceof z.ZodUnion) {
    // newsfeed: 'all' or a list.
    const kinds = new Set((u.options as z.ZodType[]).map(kindOf));
    return kinds.has('array') ? 'array' : 'any';
  }
  // String formats (z.email(), z.url()) are their own classes in zod 4, not ZodString.
  return u instanceof z.ZodString ||
    u instanceof z.ZodStringFormat ||
    u instanceof z.ZodEnum ||
    u instanceof z.ZodLiteral
    ? 'string'
    : 'any';
}

function convert(field: string, kind: Kind, raw: string[]): unknown {
  const last = raw[raw.length - 1];
  switch (kind) {
    case 'number': {
      const n = Number(last);
      if (last.trim() === '' || Number.isNaN(n))
        throw new UsageError(`--${field} must be a number`);
      return n;
    }
    case 'boolean':
      if (last === 'true' || last === '') return true;
      if (last === 'false') return false;
      throw new UsageError(`--${field} must be true or false`);
    case 'array':
      if (raw.length === 1 && last === 'all') return 'all';
      return raw
        .flatMap((r) => r.split(','))
        .map((s) => s.trim())
        .filter(Boolean);
    case 'object':
      try {
        return JSON.parse(last) as unknown;
      } catch {
        throw new UsageError(`--${field} must be a JSON object`);
      }
    default:
      return last;
  }
}

const toField = (flag: string) => flag.replace(/-/g, '_');

/**
 * Parses `--name value` / `--flag` / `--no-flag` pairs into typed parameters. `--json '{...}'`
 * supplies a base object that flags override.
 */
export function paramsFromArgs(
  endpoint: EndpointDef,
  args: readonly string[],
): Record<string, unknown> {
  const shape = shapeOf(endpoint);
  const raw = new Map<string, string[]>();
  let base: Record<string, unknown> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith('--'))
      throw new UsageError(`unexpected argument "${arg}": parameters are given as --name value`);
    let name = arg.slice(2);
    let value: string | undefined;
    const eq = name.indexOf('=');
    if (eq >= 0) {
      value = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    if (name === 'json') {
      const text = value ?? args[++i];
      if (text === undefined) throw new UsageError('--json needs a JSON object');
      try {
        const parsed = JSON.parse(text) as unknown;
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
          throw new Error();
        base = parsed as Record<string, unknown>;
      } catch {
        throw new UsageError('--json must be a JSON object');
      }
      continue;
    }
    let field = toField(name);
    let kind = kindOf(shape?.[field]);
    if (
      value === undefined &&
      name.startsWith('no-') &&
      kindOf(shape?.[toField(name.slice(3))]) === 'boolean'
    ) {
      field = toField(name.slice(3));
      kind = 'boolean';
      value = 'false';
    }
    if (shape && !(field in shape) && field !== 'callback_url' && !isLoose(endpoint)) {
      throw new UsageError(
        `--${name} is not a parameter of ${endpoint.name} (see \`pcds call ${endpoint.name} --help\`)`,
      );
    }
    if (value === undefined) {
      const next = args[i + 1];
      if (
        kind === 'boolean' &&
        (next === undefined || next.startsWith('--') || (next !== 'true' && next !== 'false'))
      )
        value = 'true';
      else {
        if (next === undefined || next.startsWith('--'))
          throw new UsageError(`--${name} needs a value`);
        value = next;
        i++;
      }
    }
    raw.set(field, [...(raw.get(field) ?? []), value]);
  }
  const out: Record<string, unknown> = { ...base };
  for (const [field, values] of raw) out[field] = convert(field, kindOf(shape?.[field]), values);
  return out;
}

function isLoose(endpoint: EndpointDef): boolean {
  // Endpoints whose payloads the interface does not show accept further fields.
  const s = endpoint.input as unknown as { _zod?: { def?: { catchall?: unknown } } };
  return s._zod?.def?.catchall !== undefined && !(s._zod.def.catchall instanceof z.ZodNever);
}

type JsonSchema = Record<string, unknown>;

/** What a parameter's JSON Schema says beyond its type: range, items, format and default. */
function notesOf(p: JsonSchema | undefined): string[] {
  if (!p) return [];
  const notes: string[] = [];
  const { minimum: min, maximum: max } = p as { minimum?: number; maximum?: number };
  const bounded = (n: number | undefined) => n !== undefined && Math.abs(n) < 2 ** 31;
  if (p.type === 'integer' || p.type === 'number') {
    const kind = p.type === 'integer' ? 'integer' : 'number';
    if (bounded(min) && bounded(max)) notes.push(`${kind} ${min}-${max}`);
    else if (bounded(min)) notes.push(`${kind} >= ${min}`);
    else if (bounded(max)) notes.push(`${kind} <= ${max}`);
    else if (kind === 'integer') notes.push('integer');
  }
  if (p.format === 'date') notes.push('YYYY-MM-DD');
  const items = p.items as JsonSchema | undefined;
  if (Array.isArray(items?.enum)) notes.push(`of ${(items.enum as string[]).join(', ')}`);
  if (Array.isArray(p.anyOf)) {
    // newsfeed: `all`, or a list of platforms.
    const list = (p.anyOf as JsonSchema[]).find((a) => a.type === 'array');
    const constant = (p.anyOf as JsonSchema[]).find((a) => a.const !== undefined);
    const platforms = (list?.items as JsonSchema | undefined)?.enum as string[] | undefined;
    if (constant && platforms)
      notes.push(`${String(constant.const)}, or a list of ${platforms.join(', ')}`);
  }
  if (p.default !== undefined) notes.push(`default ${JSON.stringify(p.default).replace(/"/g, '')}`);
  return notes;
}

/** Which parameters must be given: always, and "at least one of" (fields joined by +). */
function requiredOf(schema: JsonSchema): { always: string[]; oneOf: string[][] } {
  const always = (schema.required as string[] | undefined) ?? [];
  const choices: JsonSchema[] = [];
  if (Array.isArray(schema.anyOf)) choices.push(schema);
  for (const c of (schema.allOf as JsonSchema[] | undefined) ?? [])
    if (Array.isArray(c.anyOf)) choices.push(c);
  const oneOf = choices.map((c) =>
    (c.anyOf as JsonSchema[]).map((w) => ((w.required as string[]) ?? []).join('+')),
  );
  return { always, oneOf };
}

const flagOf = (field: string) => `--${field.replace(/_/g, '-')}`;

/** `Give at least one of: --a, --b + --c` for each such rule of the endpoint's schema. */
export function requiredHelp(endpoint: EndpointDef): string[] {
  if (!shapeOf(endpoint)) return [];
  return requiredOf(jsonSchemaOf(endpoint.input)).oneOf.map(
    (ways) =>
      `Give at least one of: ${ways.map((w) => w.split('+').map(flagOf).join(' + ')).join(', ')}.`,
  );
}

/**
 * The endpoint's parameters from its schema (the catalogue's zod input, read as JSON Schema): one
 * line each, `--name <type>  notes` (range, default, required).
 */
export function parameterHelp(endpoint: EndpointDef): string[] {
  const shape = shapeOf(endpoint);
  if (!shape) return ["  (free-form: pass --json '{...}')"];
  const schema = jsonSchemaOf(endpoint.input);
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const { always } = requiredOf(schema);
  const rows = Object.entries(shape).map(([field, t]) => {
    const kind = kindOf(t);
    const u = unwrap(t);
    let type: string =
      kind === 'array' ? 'a,b,...' : kind === 'object' ? 'json' : kind === 'boolean' ? '' : kind;
    if (u instanceof z.ZodEnum) type = (u.options as string[]).join('|');
    else if (u instanceof z.ZodEmail) type = 'email';
    else if (u instanceof z.ZodURL || field === 'callback_url') type = 'uri';
    const notes = [...(always.includes(field) ? ['required'] : []), ...notesOf(properties[field])];
    return { flag: `${flagOf(field)}${type ? ` <${type}>` : ''}`, notes: notes.join('; ') };
  });
  if (!('callback_url' in shape)) rows.push({ flag: '--callback-url <uri>', notes: '' });
  const width = Math.max(...rows.map((r) => r.flag.length));
  const lines = rows.map((r) => `  ${r.flag.padEnd(width)}  ${r.notes}`.trimEnd());
  if (isLoose(endpoint)) lines.push('  (further fields are passed as given)');
  return lines;
}
