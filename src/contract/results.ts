// Where a completed job's payload sits, and whether it is empty (empty results are never charged
// and become an explicit "no match" outcome).
import type { ResultPath } from './catalogue.js';

export function extractResult(
  data: Record<string, unknown> | undefined,
  path: ResultPath,
): unknown {
  if (!data) return undefined;
  switch (path) {
    case 'data':
      return data;
    case 'data.result':
      return data.result;
    case 'data.results':
      return data.results;
    case 'data.result.newsfeed': {
      const r = data.result;
      return typeof r === 'object' && r !== null
        ? (r as Record<string, unknown>).newsfeed
        : undefined;
    }
  }
}

/** Empty: nothing, an empty list, or an object whose every field is itself empty. */
export function isEmptyResult(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value === 'string') return value.trim() === '';
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') return Object.values(value).every(isEmptyResult);
  return false;
}
