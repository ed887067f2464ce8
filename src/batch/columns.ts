// How the columns of an input file become an endpoint's parameters: the --map option, the check
// of a CSV header against the catalogue, and the typing of CSV cells (which are all strings).
import { PcdsError } from '../contract/pcds-error.js';
import type { z } from 'zod';
import { CALLBACK_KEY, trimSurrounding, type EndpointDef } from '../contract/index.js';

export class ColumnError extends PcdsError {
  override name = 'ColumnError';
  constructor(message: string) {
    super('invalid_input_file', message);
  }
}

interface ObjectSchemaInternals {
  shape?: Record<string, z.ZodType>;
  _zod?: { def?: { catchall?: { _zod?: { def?: { type?: string } } } } };
}

/** Parameters a batch row may set: the endpoint's own, minus callback_url (set by --webhooks). */
export function endpointParameters(endpoint: EndpointDef): { names: string[]; open: boolean } {
  const schema = endpoint.input as unknown as ObjectSchemaInternals;
  const names = Object.keys(schema.shape ?? {}).filter((n) => n !== 'callback_url');
  // Strict schemas reject unknown keys (catchall never); the loosely documented endpoints pass them.
  const open = schema._zod?.def?.catchall?._zod?.def?.type !== 'never';
  return { names, open };
}

/** Parses `email=Email Address,name=Full Name` into parameter -> column. */
export function parseColumnMap(spec: string | undefined): Record<string, string> {
  const map: Record<string, string> = {};
  if (!spec) return map;
  for (const part of spec.split(',')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    if (eq <= 0 || eq === part.length - 1) {
      throw new ColumnError(`--map: "${part.trim()}" is not of the form parameter=column`);
    }
    const param = part.slice(0, eq).trim();
    const column = part.slice(eq + 1).trim();
    if (param in map) throw new ColumnError(`--map: parameter "${param}" is mapped twice`);
    map[param] = column;
  }
  return map;
}

/**
 * What is wrong with a column map whatever the file holds: a parameter the endpoint does not
 * take, or callback_url (set by --webhooks). Checked before the file is read.
 */
export function columnMapProblems(
  endpoint: EndpointDef,
  columnMap: Record<string, string>,
): string[] {
  const { names, open } = endpointParameters(endpoint);
  const problems: string[] = [];
  for (const param of Object.keys(columnMap)) {
    if (CALLBACK_KEY.test(param))
      problems.push('--map: callback_url is set by --webhooks, not by a column');
    else if (!open && !names.includes(param))
      problems.push(`--map: "${param}" is not a parameter of ${endpoint.name}`);
  }
  return problems;
}

/** Refuses a column map with columnMapProblems, before any file is read. */
export function checkColumnMap(endpoint: EndpointDef, columnMap: Record<string, string>): void {
  const problems = columnMapProblems(endpoint, columnMap);
  if (problems.length > 0) throw new ColumnError(problems.join('; '));
}

/**
 * The one answer to a header that does not fit, for a caller who cannot read the file (`pcds
 * mcp`): the same words whatever the header holds and whichever column or mapped name is at
 * fault, so nobody learns a file's header by trying names.
 */
export function headerMismatchAnswer(endpoint: EndpointDef, mapped: boolean): string {
  const { names } = endpointParameters(endpoint);
  return (
    `the input's header does not fit ${endpoint.name}${mapped ? ' with this map' : ''}: each column ` +
    `must be a parameter of ${endpoint.name} (${names.join(', ')}) or be mapped to one with map ` +
    '("parameter=Column Name", the name exactly as in the header row); no two columns may feed ' +
    'one parameter and none may be callback_url; which column or name is at fault is not said, ' +
    'as the file is not shown'
  );
}

/** A header cell that reads like a person's value (an email, a phone number, a URL), not a name. */
function looksLikeValue(name: string): boolean {
  return (
    name.includes('@') || /^\+?[\d\s().-]{6,}$/.test(name) || /^(https?:\/\/|www\.)/i.test(name)
  );
}

/** Column name -> parameter name, after checking the map and the columns against the endpoint. */
export type ColumnPlan = Map<string, string | null>;

/**
 * Checks a CSV header (or the keys of a JSONL row) against the endpoint and returns the plan.
 * Unknown columns are an error that names them and the ways out, before any row is started.
 */
export function planColumns(
  endpoint: EndpointDef,
  columns: readonly string[],
  columnMap: Record<string, string> = {},
  ignore: readonly string[] = [],
  /** JSONL: the keys of one object, which need not hold every mapped column. */
  sample = false,
): ColumnPlan {
  const { names, open } = endpointParameters(endpoint);
  const known = new Set(names);
  const problems: string[] = [];
  const seen = new Set<string>();
  // A file without its header row has its first row taken for one: then no cell of it is named
  // in a message (they are a person's email, phone, name), only the position that gave it away.
  const valueAt = columns.findIndex(looksLikeValue);
  if (valueAt >= 0)
    throw new ColumnError(
      `the ${sample ? 'keys hold' : 'first line holds'} values, not column names (column ${valueAt + 1} looks like an ` +
        `email, a phone number or a URL): ${sample ? 'name each field by its parameter' : 'add a header row naming the columns'} ` +
        `(${endpoint.name}'s parameters: ${names.join(', ')})`,
    );
  const what = sample ? 'key' : 'column';
  const at = (i: number) => `${what} ${i + 1}`;
  columns.forEach((c, i) => {
    if (seen.has(c))
      problems.push(
        `${at(i)} has the name of ${at(columns.indexOf(c))} (${sample ? 'keys' : 'header cells'} must differ)`,
      );
    seen.add(c);
  });
  const byColumn = new Map<string, string>();
  problems.push(...columnMapProblems(endpoint, columnMap));
  for (const [param, column] of Object.entries(columnMap)) {
    if (!sample && !seen.has(column)) {
      problems.push(`--map: column "${column}" is not in the input's header`);
    }
    byColumn.set(column, param);
  }
  for (const c of ignore) {
    if (!sample && !seen.has(c))
      problems.push(`--ignore: column "${c}" is not in the input's header`);
  }
  const plan: ColumnPlan = new Map();
  // Unknown columns are named by position only: a header cell is file content (a pasted key, a
  // person's value), and an error message never quotes file content.
  const unknown: number[] = [];
  columns.forEach((c, i) => {
    if (ignore.includes(c)) {
      plan.set(c, null);
      return;
    }
    const param = byColumn.get(c) ?? c;
    if (CALLBACK_KEY.test(param)) {
      problems.push(
        `${at(i)} is callback_url: the callback is set by --webhooks, not by a ${what}`,
      );
    } else if (!open && !known.has(param)) {
      unknown.push(i);
    }
    plan.set(c, param);
  });
  if (unknown.length > 0) {
    const listed = unknown.map(at);
    const list =
      listed.length > 1 ? `${listed.slice(0, -1).join(', ')} and ${listed.at(-1)}` : listed[0];
    problems.push(
      `${list} ${unknown.length > 1 ? 'are not parameters' : 'is not a parameter'} of ${endpoint.name} ` +
        `(its parameters: ${names.join(', ')}); map ${unknown.length > 1 ? 'them' : 'it'} with --map parameter=column or drop ${unknown.length > 1 ? 'them' : 'it'} with --ignore`,
    );
  }
  const mapped = [...plan.values()].filter((p): p is string => p !== null);
  const twice = mapped.filter((p, i) => mapped.indexOf(p) !== i);
  // A parameter the caller mapped or the catalogue knows is no file content; two header cells of
  // one name were named by position above.
  for (const p of new Set(twice))
    if (p in columnMap || known.has(p)) problems.push(`two ${what}s feed the parameter "${p}"`);
  if (problems.length > 0) throw new ColumnError(problems.join('; '));
  return plan;
}

/**
 * Gives a CSV cell the type its parameter expects: the first reading (text, number, boolean,
 * JSON) the parameter's schema accepts. A cell no reading fits stays text, so validation names
 * the field and the rule. Empty cells are absent parameters.
 */
export function typedCell(endpoint: EndpointDef, param: string, cell: string): unknown {
  const schema = (endpoint.input as unknown as ObjectSchemaInternals).shape?.[param];
  if (!schema) return cell;
  const candidates: unknown[] = [cell];
  const t = cell.trim();
  if (t !== '' && !Number.isNaN(Number(t))) candidates.push(Number(t));
  if (/^(true|false)$/i.test(t)) candidates.push(t.toLowerCase() === 'true');
  if (/^[[{"]/.test(t)) {
    try {
      candidates.push(JSON.parse(t));
    } catch {
      // Not JSON: the text reading stands.
    }
  }
  for (const c of candidates) if (schema.safeParse(c).success) return c;
  return cell;
}

const isBlank = (text: string) => trimSurrounding(text) === '';

/** Maps one record (column -> value) to parameters following the plan; empty cells are left out. */
export function paramsOf(
  endpoint: EndpointDef,
  plan: ColumnPlan,
  record: Record<string, unknown>,
  typeCells: boolean,
): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(record)) {
    const param = plan.has(column) ? plan.get(column) : column;
    if (param === null || param === undefined) continue;
    // A cell of spaces is as empty as an empty one.
    if (value === undefined || value === null || (typeof value === 'string' && isBlank(value)))
      continue;
    params[param] =
      typeCells && typeof value === 'string' ? typedCell(endpoint, param, value) : value;
  }
  return params;
}

/** The row's identity fields (email, phone, ...), so each output line can be matched to its input. */
export function rowKey(
  endpoint: EndpointDef,
  params: Record<string, unknown>,
): Record<string, unknown> {
  const fields = new Set(endpoint.identity.flat());
  if (fields.has('social_media_url')) fields.add('linkedin_url');
  const key: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) if (fields.has(k)) key[k] = v;
  // Endpoints without identity inputs: the whole input is the key.
  return fields.size === 0 ? { ...params } : key;
}
