// `pcds batch pause|resume|window|cancel`: signals to a running batch (and a resume of a batch that
// ended with rows its credit budget skipped), each with a warning when no worker polls.
import { Command } from 'commander';
import { resumeBatch, batchStatus } from '../../client/batch-launch.js';
import { readEachThrottleStatus } from '../../client/throttle-operator.js';
import { pauseBatchSignal, setBatchWindowSignal } from '../../batch/messages.js';
import { MAX_WINDOW, type BatchProgress } from '../../batch/types.js';
import { intArg, TENANT_HELP, tenantArg } from '../args.js';
import { action } from '../output.js';
import { warnLater, withBatch } from './connect.js';

/**
 * What a resume does to the keys' credit breakers, for the operator who sends it: only a resume
 * after a pause for credits closes them (the operator says the account was topped up); any other
 * resume leaves an open breaker open, and rows on that key pause the batch for credits again.
 */
export function resumeNotes(p: Pick<BatchProgress, 'paused'>, openBreakers: string[]): string[] {
  if (!p.paused) return ['the batch was not paused: nothing changes'];
  if (p.paused.code === 'insufficient_credits')
    return [
      `paused for credits: this resume closes the credit breaker of its keys${openBreakers.length ? ` (open: ${openBreakers.join(', ')})` : ''}; a key still without credits opens it again at its next submit`,
    ];
  return openBreakers.map(
    (k) =>
      `key ${k}: its credit breaker is open and stays open (this batch was paused for ${p.paused!.code}, not for credits); after a top-up: pcds throttle resume ${k}`,
  );
}

/** `pcds batch pause <id>`: rows in flight finish, none starts. */
export function registerPauseCommand(cmd: Command): void {
  cmd
    .command('pause <id>')
    .description('Stop starting rows; rows in flight finish and are written')
    .option('--reason <text>', 'shown in the progress (no personal data)')
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .action(
      action(async (given: string, o: { reason?: string; tenant?: string }) =>
        withBatch(given, o.tenant, async (handle, _config, _client, id) => {
          await handle.signal(pauseBatchSignal, o.reason ? { reason: o.reason } : {});
          process.stdout.write(`pause sent to batch ${id}\n`);
          await warnLater(handle, 'the batch pauses when one does');
        }),
      ),
    );
}

/** `pcds batch resume <id>`: rows start again, with a new credit budget if given. */
export function registerResumeCommand(cmd: Command): void {
  cmd
    .command('resume <id>')
    .description(
      "Start rows again (re-reads the worker's keys; after a pause for credits, closes their credit breakers). With --max-credits: a higher budget; a batch that ended with rows skipped for its budget runs those rows",
    )
    .option(
      '--max-credits <n>',
      'the new credit budget (credits charged so far count against it)',
      intArg('--max-credits', 0, 1_000_000_000),
    )
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .action(
      action(async (given: string, o: { maxCredits?: number; tenant?: string }) =>
        withBatch(given, o.tenant, async (handle, _config, client, id) => {
          const budget = o.maxCredits !== undefined ? { maxCredits: o.maxCredits } : {};
          const status = await batchStatus(handle);
          if (status.ended) {
            // Only a batch that ended with rows skipped for its budget has something to resume.
            await resumeBatch(client, id, budget);
            process.stdout.write(
              `batch ${id} runs again with a budget of ${o.maxCredits} credits: its skipped rows run, its other lines stay (pcds batch watch ${id})\n`,
            );
            return;
          }
          if (!status.ended && status.published) {
            // No worker: the signal waits in the batch's history; breakers cannot be read.
            await resumeBatch(client, id, budget);
            process.stdout.write(`resume sent to batch ${id}\n`);
            process.stderr.write(
              `warning: ${status.published.reason}; the batch resumes when one does\n`,
            );
            return;
          }
          const keyIds = status.progress.pool.map((k) => k.id);
          const breakers = (await readEachThrottleStatus(client, keyIds)).flatMap((r) =>
            r.status?.snapshot.breaker.open ? [r.keyId] : [],
          );
          await resumeBatch(client, id, budget);
          process.stdout.write(`resume sent to batch ${id}\n`);
          for (const note of resumeNotes(status.progress, breakers))
            process.stdout.write(`  ${note}\n`);
        }),
      ),
    );
}

/** `pcds batch window <id> <width>`: how many rows are in flight at once. */
export function registerWindowCommand(cmd: Command): void {
  cmd
    .command('window <id> <width>')
    .description(`Set how many rows are in flight at once (1-${MAX_WINDOW})`)
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .action(
      action(async (given: string, width: string, o: { tenant?: string }) => {
        const n = intArg('window', 1, MAX_WINDOW)(width);
        await withBatch(given, o.tenant, async (handle, _config, _client, id) => {
          await handle.signal(setBatchWindowSignal, n);
          process.stdout.write(`window of batch ${id} set to ${n}\n`);
          await warnLater(handle, 'the batch takes the window when one does');
        });
      }),
    );
}

/** `pcds batch cancel <id>`: what finished is written, with a summary. */
export function registerCancelCommand(cmd: Command): void {
  cmd
    .command('cancel <id>')
    .description(
      'Cancel a batch: rows in flight are cancelled, what finished is written with a summary',
    )
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .action(
      action(async (given: string, o: { tenant?: string }) =>
        withBatch(given, o.tenant, async (handle, _config, _client, id) => {
          await handle.cancel();
          process.stdout.write(`cancel sent to batch ${id}\n`);
          await warnLater(handle, 'the batch writes what finished and stops when one does');
        }),
      ),
    );
}
