// The README's own `pcds call` examples (its "Everyday use" block) run as written against the
// emulator and the worker, and give what they promise: a found person, a page of the search with
// the paging fields. The library example uses an email the CLI examples prove is found.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { sharedCliEnv } from './cli-env.js';

const shared = sharedCliEnv();
const readme = readFileSync(join(projectRoot(), 'README.md'), 'utf8');

/** Words of a shell line: double-quoted words kept whole, a trailing `# comment` left out. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const m of line.matchAll(/"([^"]*)"|(\S+)/g)) {
    if (m[2]?.startsWith('#')) break;
    words.push(m[1] ?? m[2]);
  }
  return words;
}

/** The `npx pcds call <endpoint> ...` lines of the first sh block under "## Everyday use". */
function callExamples(): string[][] {
  const section = readme.slice(readme.indexOf('## Everyday use'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1];
  return block
    .split('\n')
    .filter((l) => l.startsWith('npx pcds call ') && !l.includes('--help'))
    .map((l) => shellWords(l).slice(2));
}

it('rule: every `pcds call` example of the README returns what it promises', async () => {
  const examples = callExamples();
  const endpoints = examples.map((args) => args[1]);
  expect(endpoints).toEqual(expect.arrayContaining(['person_enrichment', 'person_search']));
  const { emulator } = shared.cli;
  const results = await Promise.all(examples.map((args) => shared.pcds(...args)));
  for (const [i, args] of examples.entries()) {
    const r = results[i];
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    const outcome = JSON.parse(r.stdout) as {
      outcome: string;
      result: unknown;
      page?: { offset: number; limit: number; has_more: boolean; next_offset?: number };
    };
    expect(outcome.outcome, args.join(' ')).toBe('found');
    if (args[1] !== 'person_search') continue;
    const flag = (name: string) => {
      const at = args.indexOf(name);
      return at < 0 ? undefined : Number(args[at + 1]);
    };
    const limit = flag('--limit')!;
    const offset = flag('--offset') ?? 0;
    expect(outcome.result).toHaveLength(limit);
    expect(outcome.page).toMatchObject({ offset, limit });
    // The rows are the ones the emulator itself gives for that page.
    const query = args[args.indexOf('--query') + 1];
    expect(outcome.result).toEqual(await emulatorPage(emulator, query, offset, limit));
    if (outcome.page!.has_more)
      expect(r.stderr).toContain(
        `--offset ${outcome.page!.next_offset} --limit ${outcome.page!.limit}`,
      );
  }
  // The library example's email is one the examples above find.
  const libraryEmail = /pcds\.call\('person_enrichment', \{ email: '([^']+)' \}/.exec(readme)?.[1];
  expect(libraryEmail).toBeDefined();
  expect(examples.some((args) => args.includes(libraryEmail!))).toBe(true);
});

async function emulatorPage(
  emulator: { url: string; devKey: { key: string; secret: string } },
  query: string,
  offset: number,
  limit: number,
): Promise<unknown[]> {
  const headers = {
    'content-type': 'application/json',
    'x-api-key': emulator.devKey.key,
    'x-api-secret': emulator.devKey.secret,
  };
  const posted = (await (
    await fetch(`${emulator.url}/person/search`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ query, offset, limit }),
    })
  ).json()) as { data: { request_id: string } };
  const url = `${emulator.url}/person/search?request_id=${posted.data.request_id}&offset=${offset}&limit=${limit}`;
  for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
    const got = (await (await fetch(url, { headers })).json()) as {
      data: { completed?: boolean; results?: unknown[] };
    };
    if (got.data.completed) return got.data.results ?? [];
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the emulator never completed the search');
}
