// Every relative link of the README and of docs/ leads somewhere: to a file that exists and that
// the package ships (a user of the packed library reads the same pages), and, with an anchor, to
// a heading of that page as GitHub names it. Every page of docs/ is reachable from the README.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../../src/temporal/cli-binary.js';
import { anchors, brokenLinks, links, slug } from './markdown.js';

const root = projectRoot();
const read = (path: string) => readFileSync(path, 'utf8');
const disk = { read, exists: existsSync };
const shipped = (JSON.parse(read(join(root, 'package.json'))) as { files: string[] }).files.filter(
  (f) => !f.startsWith('!'),
);
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

describe('documentation links', () => {
  it.each(pages)('rule: every relative link of %s resolves', (page) => {
    expect(brokenLinks(root, page, disk, shipped)).toEqual([]);
  });

  it('rule: the README links every page of docs/', () => {
    const linked = new Set(
      links(read(join(root, 'README.md'))).map((l) => l.target.replace(/#.*$/, '')),
    );
    expect(pages.filter((p) => p !== 'README.md' && !linked.has(p))).toEqual([]);
  });
});

// The checker itself, on pages made up for it: each kind of broken link is reported.
describe('the link checker', () => {
  const files: Record<string, string> = {
    '/r/README.md': [
      '# Title',
      '## `pcds dev`: the local stack',
      "### Where a batch's data lives: the store",
      '## Twice',
      '## Twice',
      'See [dev](#pcds-dev-the-local-stack), [store](#where-a-batchs-data-lives-the-store),',
      '[second](#twice-1), [page](docs/a.md#a-heading), [site](https://example.com/#x).',
      'Broken: [gone](docs/gone.md), [no anchor](#nowhere), [far](docs/a.md#other),',
      '[unshipped](src/x.ts), [up](../outside.md), [into code](docs/a.ts#L3).',
      '`[not a link](docs/missing.md)` and',
      '```',
      '[nor this](docs/missing.md)',
      '```',
    ].join('\n'),
    '/r/docs/a.md': '# A heading\n',
    '/r/docs/a.ts': '',
    '/r/src/x.ts': '',
  };
  const fake = { read: (path: string) => files[path], exists: (path: string) => path in files };

  it('finds the anchors GitHub makes, repeated headings numbered', () => {
    expect(slug("Where a batch's data lives: the store")).toBe(
      'where-a-batchs-data-lives-the-store',
    );
    expect([...anchors(files['/r/README.md'])]).toEqual([
      'title',
      'pcds-dev-the-local-stack',
      'where-a-batchs-data-lives-the-store',
      'twice',
      'twice-1',
    ]);
  });

  it('reports each broken link and passes the good ones', () => {
    expect(brokenLinks('/r', 'README.md', fake, ['README.md', 'docs'])).toEqual([
      'README.md:8: docs/gone.md: no such file (docs/gone.md)',
      'README.md:8: #nowhere: no heading of README.md has the anchor #nowhere',
      'README.md:8: docs/a.md#other: no heading of docs/a.md has the anchor #other',
      'README.md:9: src/x.ts: src/x.ts is not in the package (package.json "files")',
      'README.md:9: ../outside.md: no such file (../outside.md)',
      'README.md:9: docs/a.ts#L3: an anchor into a file that is not a Markdown page',
    ]);
  });
});
