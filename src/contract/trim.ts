// Whitespace around parameter values: an email, a URL or a name exported or pasted with spaces
// around it means the same value without them. One rule for every edge (files, the CLI, the
// client, MCP) and for what duplicate detection and the result cache compare.

/** A text value without the whitespace around it (String.prototype.trim's: Unicode spaces, tabs, line ends). */
export const trimSurrounding = (text: string): string => text.trim();

function trimmedValue(value: unknown): unknown {
  if (typeof value === 'string') return trimSurrounding(value);
  if (Array.isArray(value)) return value.map(trimmedValue);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = trimmedValue(v);
    return out;
  }
  return value;
}

/** Whether trimming changes a value (a text, or a text in a list or a nested object). */
function hasSurroundingSpace(value: unknown): boolean {
  if (typeof value === 'string') return trimSurrounding(value) !== value;
  if (Array.isArray(value)) return value.some(hasSurroundingSpace);
  if (value !== null && typeof value === 'object')
    return Object.values(value).some(hasSurroundingSpace);
  return false;
}

/**
 * The parameters with every text value trimmed (in lists and nested objects too; keys as they
 * are), and the parameters whose value changed. The same object when nothing did.
 */
export function trimParams(params: Record<string, unknown>): {
  value: Record<string, unknown>;
  trimmed: string[];
} {
  const trimmed = Object.keys(params).filter((k) => hasSurroundingSpace(params[k]));
  if (trimmed.length === 0) return { value: params, trimmed };
  const value = { ...params };
  for (const k of trimmed) value[k] = trimmedValue(params[k]);
  return { value, trimmed };
}
