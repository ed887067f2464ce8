// What `pcds mcp` answers say of files: a batch's or an export's summary and progress name their
// files relative to the caller's file root (as the tools take them), never by the server's
// absolute paths, and a failure to write the CSV gives its errno code, not a message quoting one.
import type { FileRoot } from './file-root.js';

type Doc = Record<string, unknown>;

const isDoc = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The document with its file fields shown through the root: `output`, `csvOutput`, `source.path`
 * and `csv.path` (a batch's summary or progress, an export's summary). Other fields as they are.
 */
export async function withShownPaths<T>(doc: T, files: Pick<FileRoot, 'shown'>): Promise<T> {
  if (!isDoc(doc)) return doc;
  const out: Doc = { ...doc };
  for (const key of ['output', 'csvOutput'])
    if (typeof out[key] === 'string') out[key] = await files.shown(out[key]);
  for (const key of ['source', 'csv']) {
    const inner = out[key];
    if (isDoc(inner) && typeof inner.path === 'string')
      out[key] = { ...inner, path: await files.shown(inner.path) };
  }
  if (typeof out.csvError === 'string') {
    const errno = /\b(E[A-Z]{2,})\b/.exec(out.csvError)?.[1];
    out.csvError = `the CSV could not be written${errno ? ` (${errno})` : ''}`;
  }
  return out as T;
}
