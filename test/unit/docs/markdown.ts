// Reading the project's Markdown as GitHub renders it, for the documentation tests: headings and
// their anchors (GitHub's slugs), the links of a page, the rows of its tables. Code blocks and
// code spans are neither headings nor links.
import { dirname, join, normalize, sep } from 'node:path';

/** The page with its fenced code blocks blanked, line for line, so line numbers still hold. */
export function withoutCodeBlocks(markdown: string): string {
  let fence: string | undefined;
  return markdown
    .split('\n')
    .map((line) => {
      const opening = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
      if (fence === undefined && opening) {
        fence = opening;
        return '';
      }
      if (fence !== undefined) {
        if (line.trim().startsWith(fence)) fence = undefined;
        return '';
      }
      return line;
    })
    .join('\n');
}

/** The text GitHub shows for a heading: code spans as their text, links as their label. */
function headingText(raw: string): string {
  return raw
    .replace(/\s+#+\s*$/, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim();
}

/**
 * GitHub's anchor for a heading (as github-slugger makes it): lower case, every character that
 * is not a letter, mark, number, connector, space or hyphen dropped, spaces made hyphens.
 */
export function slug(text: string): string {
  return headingText(text)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page's headings; a repeated heading gets `-1`, `-2`, ... as on GitHub. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of withoutCodeBlocks(markdown).matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

export interface Link {
  target: string;
  line: number;
}

/** Every link target of a page: inline links and images, and reference definitions. */
export function links(markdown: string): Link[] {
  // Code spans may run over a line break; they become spaces of the same length.
  const text = withoutCodeBlocks(markdown).replace(/`[^`]*`/g, (s) => s.replace(/[^\n]/g, ' '));
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  const found: Link[] = [];
  for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
    found.push({ target: m[1], line: lineOf(m.index) });
  for (const m of text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm))
    found.push({ target: m[1], line: lineOf(m.index) });
  return found;
}

/** Links that leave the project (a scheme such as https: or mailto:) are not checked here. */
const external = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);

/**
 * What is wrong with each relative link of the page at `file` (a path under `root`): a target
 * that does not exist, one outside what the package ships (`shipped`: paths from the root, a
 * folder ships what it holds), or an anchor that no heading of the target page has.
 */
export function brokenLinks(
  root: string,
  file: string,
  files: { read: (path: string) => string; exists: (path: string) => boolean },
  shipped: string[],
): string[] {
  const problems: string[] = [];
  const page = files.read(join(root, file));
  for (const { target, line } of links(page)) {
    if (external(target)) continue;
    const at = `${file}:${line}: ${target}`;
    const hash = target.indexOf('#');
    const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const path = pathPart ? normalize(join(dirname(file), pathPart)) : file;
    if (path.startsWith('..') || !files.exists(join(root, path))) {
      problems.push(`${at}: no such file (${path})`);
      continue;
    }
    const top = path.split(sep)[0];
    if (!shipped.some((s) => s === path || s === top || path.startsWith(`${s}${sep}`)))
      problems.push(`${at}: ${path} is not in the package (package.json "files")`);
    if (anchor === undefined) continue;
    if (!path.endsWith('.md')) {
      problems.push(`${at}: an anchor into a file that is not a Markdown page`);
      continue;
    }
    if (!anchors(files.read(join(root, path))).has(anchor))
      problems.push(`${at}: no heading of ${path} has the anchor #${anchor}`);
  }
  return problems;
}

/** The rows of every table between a heading and the next heading of the same or a higher level. */
export function tableRowsUnder(markdown: string, heading: string): string[][] {
  const lines = withoutCodeBlocks(markdown).split('\n');
  const start = lines.findIndex((l) => l.trim() === heading);
  if (start < 0) return [];
  const level = /^#+/.exec(heading)![0].length;
  const rows: string[][] = [];
  for (const line of lines.slice(start + 1)) {
    const h = /^(#+)\s/.exec(line);
    if (h && h[1].length <= level) break;
    if (!line.startsWith('|') || /^\|\s*-/.test(line)) continue;
    rows.push(
      line
        .slice(1, line.trimEnd().endsWith('|') ? line.trimEnd().length - 1 : undefined)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim()),
    );
  }
  return rows;
}
