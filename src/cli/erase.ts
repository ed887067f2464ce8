// `pcds erase`: an erasure request. Everything the store holds that names the person (by email,
// profile or other URL, phone number, or name at a company), in the result cache, in batch rows
// and results and in what waits for them, goes; the report says what went, what the store could
// not check and where else the person's data may be. No value given is ever printed.
import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { openStoreFromSettings } from '../store/index.js';
import { eraseFromStore, type ErasureReport } from '../store/erasure.js';
import {
  phoneIdentifier,
  personAtCompanyIdentifier,
  type ErasureIdentifiers,
} from '../store/person-identifiers.js';
import { action, printJson, UsageError } from './output.js';

export interface EraseFlags {
  email?: string[];
  url?: string[];
  phone?: string[];
  name?: string[];
  company?: string[];
  vacuum?: string;
  json?: boolean;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** The identifiers the flags give; refused (never echoing a value) when one is not what it says. */
export function erasureIdentifiersOf(o: EraseFlags): ErasureIdentifiers {
  const emails = (o.email ?? []).map((e) => e.trim());
  if (emails.some((e) => !/^[^\s@]+@[^\s@]+$/.test(e)))
    throw new UsageError('--email: not an email address (the value is not shown)');
  const urls = (o.url ?? []).map((u) => u.trim());
  if (urls.some((u) => u === '' || /\s/.test(u)))
    throw new UsageError('--url: not a URL (the value is not shown)');
  const phones = o.phone ?? [];
  if (phones.some((p) => phoneIdentifier(p) === undefined))
    throw new UsageError(
      '--phone: not a phone number (seven digits at least; give it with its +country code; the value is not shown)',
    );
  const names = o.name ?? [];
  const companies = o.company ?? [];
  if (names.length > 0 && companies.length === 0)
    throw new UsageError(
      '--name: a name alone names many people: give the company too (--company), or an email, URL or phone number',
    );
  if (companies.length > 0 && names.length === 0)
    throw new UsageError('--company: give the person with it (--name)');
  const people = names.flatMap((name) => companies.map((company) => ({ name, company })));
  if (people.some((p) => personAtCompanyIdentifier(p.name, p.company) === undefined))
    throw new UsageError(
      '--name, --company: letters or digits are needed (the values are not shown)',
    );
  if (emails.length + urls.length + phones.length + people.length === 0)
    throw new UsageError(
      'say whom to erase: --email, --url, --phone, or --name with --company (each may be repeated)',
    );
  return {
    ...(emails.length ? { emails } : {}),
    ...(urls.length ? { urls } : {}),
    ...(phones.length ? { phones } : {}),
    ...(people.length ? { people } : {}),
  };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The report people read: what went, what the store could not check, where else to look. */
export function erasureText(store: string, r: ErasureReport): string {
  const { removed: x, unchecked: u } = r;
  const lines = [
    `erasure in the store ${store} (${plural(r.identifiers, 'identifier')} looked for):`,
    `  ${plural(x.cacheEntries, 'cache entry', 'cache entries')} and ${plural(x.pendingCalls, 'pending single call')} removed`,
    `  ${plural(x.batchRows, 'batch row')} erased${r.batches.length ? ` (batches ${r.batches.join(', ')})` : ''}: their data, lookups and subjects dropped`,
    `  ${plural(x.results, 'result')} replaced by an "erased" line, ${plural(x.deliveries, 'waiting delivery', 'waiting deliveries')} removed`,
    `  the pages: ${r.pages}`,
  ];
  if (u.results + u.cacheEntries + u.batchRows > 0)
    lines.push(
      'not checked (stored before the store recorded every identifier an item names):',
      `  ${plural(u.results, 'result')} (checked by their rows only), ${plural(u.cacheEntries, 'cache entry', 'cache entries')} and ${plural(u.batchRows, 'batch row')} (checked by the emails and URLs of their requests only)`,
    );
  lines.push('beyond the store (erase there as well):', ...r.beyondTheStore.map((b) => `  - ${b}`));
  return lines.join('\n');
}

/** Runs an erasure on the configured store and prints its report (JSON with `json`). */
export async function runErasure(
  identifiers: ErasureIdentifiers,
  opts: { vacuum?: 'full' | 'plain'; json?: boolean },
): Promise<void> {
  const store = await openStoreFromSettings(loadConfig());
  try {
    const report = await eraseFromStore(store, identifiers, {
      ...(opts.vacuum ? { vacuum: opts.vacuum } : {}),
    });
    if (opts.json) return printJson({ store: store.location.shown, ...report });
    process.stdout.write(`${erasureText(store.location.shown, report)}\n`);
  } finally {
    await store.close();
  }
}

export function registerEraseCommand(program: Command): Command {
  return program
    .command('erase')
    .description(
      'an erasure request: remove everything the store holds that names a person (cache, batch rows and results, pending records) and say what could not be checked',
    )
    .option('--email <address>', 'an email address of the person (repeatable)', collect)
    .option('--url <url>', 'a profile or other URL of the person (repeatable)', collect)
    .option('--phone <number>', 'a phone number, with its +country code (repeatable)', collect)
    .option('--name <name>', "the person's name, with --company (repeatable)", collect)
    .option('--company <company>', 'a company the person works or worked at (repeatable)', collect)
    .option(
      '--vacuum <how>',
      'PostgreSQL: full (default) rewrites the tables that held erased data, locking each while it runs; plain only marks the space free',
    )
    .option('--json', 'print the report as JSON')
    .action(
      action(async (o: EraseFlags) => {
        if (o.vacuum !== undefined && o.vacuum !== 'full' && o.vacuum !== 'plain')
          throw new UsageError('--vacuum: full or plain');
        await runErasure(erasureIdentifiersOf(o), {
          ...(o.vacuum ? { vacuum: o.vacuum } : {}),
          ...(o.json ? { json: true } : {}),
        });
      }),
    );
}
