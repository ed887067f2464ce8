// A command line whose command does not exist, found before commander parses it: commander reads
// --help first, and would answer `pcds doctr --help` with the help of `pcds` and exit 0.
import type { Command } from 'commander';

/**
 * The first word that should name a subcommand and names none: after `pcds` (whose own options
 * take no value), after `help`, or right after a command that has subcommands (past one of its
 * options, a word may be that option's value, which names nothing).
 */
export function unknownCommand(
  root: Command,
  args: readonly string[],
): { word: string; parent: Command } | undefined {
  let at = root;
  for (const word of args) {
    if (word.startsWith('-')) {
      if (at === root) continue;
      return undefined;
    }
    if (word === 'help') continue;
    const next = at.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!next) return { word, parent: at };
    if (next.commands.length === 0) return undefined;
    at = next;
  }
  return undefined;
}
