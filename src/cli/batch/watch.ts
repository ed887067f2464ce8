// `pcds batch watch <id>` and the live view `pcds batch start` ends in: a progress bar until the
// batch ends (Ctrl-C leaves it, the batch goes on), saying why it waits and when no worker polls;
// a stored batch's results go to its files meanwhile.
import { SingleBar } from 'cli-progress';
import { Command } from 'commander';
import type { BatchProgress, BatchSummary } from '../../batch/types.js';
import {
  batchStatus,
  batchWorkers,
  queryProgress,
  type BatchHandle,
} from '../../client/batch-launch.js';
import { explainProgress, type ExplainedProgress } from '../../client/batch-waits.js';
import { waitLines, type WaitReason } from '../../client/wait-reasons.js';
import { callErrorOf } from '../../client-errors.js';
import { paceNote } from '../../config.js';
import type { BatchRecords, ResultReader } from '../../store/index.js';
import { ResultFollower } from '../../store/follow.js';
import { outputsOf, writeBatchOutputs, type BatchOutputs } from '../../store/outputs.js';
import { noWorkerMessage } from '../../temporal/pollers.js';
import { TENANT_HELP, tenantArg } from '../args.js';
import { action } from '../output.js';
import { withBatch, withStore } from './connect.js';
import { etaText, fmtSeconds, poolNotes, summaryText } from './text.js';

/** How often the progress view asks whether a worker polls, and repeats that none does. */
const WORKERS_CHECK_MS = 10_000;
const NO_WORKER_REPEAT_MS = 30_000;
/** How often the progress view reads the keys' windows (why it waits, its ETA). */
const EXPLAIN_EVERY_MS = 5_000;

interface WatchOptions {
  /** Called when Ctrl-C detaches; default prints how to watch again. */
  onDetach?: () => void;
  out?: NodeJS.WriteStream;
  /** Says the ETA is not the real service's pace (paceNote of the configuration). */
  pace?: string;
  /** Run about every half second while watching (a stored batch's results go to its files). */
  onTick?: () => Promise<void>;
}

/** How often a watch asks whether the batch ended. */
const END_CHECK_MS = 1_000;

/** How often a watch brings a stored batch's JSONL output up to date. */
const FOLLOW_EVERY_MS = 1_000;

/**
 * Watches a stored batch while its results go to the caller's JSONL as rows finish; once it
 * ended, writes the CSV (if asked) and the summary beside the output, and returns the summary
 * with what the CSV got. Undefined when the watch was left (Ctrl-C): the batch goes on.
 */
export async function watchStoredBatch(
  handle: BatchHandle,
  store: BatchRecords & ResultReader,
  files: BatchOutputs,
  opts: WatchOptions = {},
): Promise<BatchSummary | undefined> {
  const batchId = handle.workflowId.replace(/^batch-/, '');
  const follower = new ResultFollower(store, batchId, files.output);
  let followedAt = 0;
  const summary = await watchBatch(handle, {
    ...opts,
    onTick: async () => {
      if (Date.now() - followedAt < FOLLOW_EVERY_MS) return;
      followedAt = Date.now();
      await follower.step();
    },
  });
  if (!summary) {
    await follower.step();
    return undefined;
  }
  return writeBatchOutputs(store, batchId, files, summary, follower);
}

/** The progress bar's last line: how the batch ended and how long it took, no ETA. */
const endedBar = (s: BatchSummary) => ({
  found: s.found,
  empty: s.empty,
  failed: s.failed,
  rate: s.rowsPerSecond.toFixed(1),
  timing: `${s.state} in ${fmtSeconds(Math.round(s.seconds))}`,
  note: '',
});

/** The live bar: started at the first progress, then moved; the pool's notes said when they change. */
function progressBar(out: NodeJS.WriteStream, pace: string | undefined) {
  const bar = new SingleBar({
    stream: out,
    format:
      '{bar} {value}/{total} rows | found {found} empty {empty} failed {failed} | {rate} rows/s | {timing} {note}',
    hideCursor: true,
    barsize: 30,
    noTTYOutput: true,
    notTTYSchedule: 5000,
  });
  let started = false;
  let lastNotes = '';
  return {
    show(p: BatchProgress) {
      const payload = {
        found: p.found,
        empty: p.empty,
        failed: p.failed,
        rate: p.rowsPerSecond.toFixed(1),
        timing: `ETA ${etaText(p, pace)}`,
        note: p.paused
          ? `| PAUSED (${p.paused.code})`
          : p.state === 'draining'
            ? '| continuing as new'
            : '',
      };
      if (!started) {
        bar.start(Math.max(p.total, 1), p.done, payload);
        started = true;
      } else {
        bar.setTotal(Math.max(p.total, 1));
        bar.update(p.done, payload);
      }
      const notes = poolNotes(p).join('; ');
      if (notes && notes !== lastNotes) {
        out.write(`\n${notes}\n`);
      }
      lastNotes = notes;
    },
    /** Its last line (how the batch ended, when it did), then the bar stopped. */
    stop(summary: BatchSummary | undefined) {
      if (summary && started) bar.update(summary.done, endedBar(summary));
      if (started) bar.stop();
    },
  };
}

/** How a watched batch ended: its summary, or why it failed. */
type BatchEnd = { summary?: BatchSummary; error?: unknown };

/**
 * Whether the batch ended, asked every second, and its result read once it has: a long poll
 * for the result (handle.result() under an abort signal for leaving the view) made the client
 * add a listener to that signal for each of its calls, hundreds over a long batch
 * (MaxListenersExceededWarning), and nothing is left to cancel when the view is left.
 */
function batchEndCheck(handle: BatchHandle) {
  let checkedAt = 0;
  let ended: BatchEnd | undefined;
  return {
    get ended() {
      return ended;
    },
    /** Asks when a second has passed since it last did; true once the batch ended. */
    async due(): Promise<boolean> {
      if (Date.now() - checkedAt < END_CHECK_MS) return false;
      checkedAt = Date.now();
      const status = await handle
        .describe()
        .then((d) => d.status.name)
        .catch(() => undefined);
      if (status === undefined || status === 'RUNNING' || status === 'CONTINUED_AS_NEW')
        return false;
      ended = await handle.result().then(
        (summary) => ({ summary }),
        (error: unknown) => ({ error }),
      );
      return true;
    },
  };
}

/** Without a worker nothing moves and no query is answered: the view says so, and keeps saying. */
function workerPresence(handle: BatchHandle, out: NodeJS.WriteStream) {
  let checkedAt = 0;
  let noWorkerSaidAt = 0;
  let noWorker = false;
  return {
    get none() {
      return noWorker;
    },
    /** Asks again every 10 s (every 2 s while none polls). */
    async due(): Promise<void> {
      if (Date.now() - checkedAt < (noWorker ? 2_000 : WORKERS_CHECK_MS)) return;
      checkedAt = Date.now();
      const { taskQueue, presence } = await batchWorkers(handle).catch(() => ({
        taskQueue: '',
        presence: { state: 'unknown' as const },
      }));
      const none = presence.state === 'none';
      if (none && Date.now() - noWorkerSaidAt >= NO_WORKER_REPEAT_MS) {
        noWorkerSaidAt = Date.now();
        out.write(`\nwaiting: ${noWorkerMessage(taskQueue)}\n`);
      } else if (!none && noWorker) {
        noWorkerSaidAt = 0;
        out.write(`\na worker polls task queue ${taskQueue}: the batch goes on\n`);
      }
      noWorker = none;
    },
  };
}

/**
 * Why the batch waits (a key's window full until a time, a budget), said when it changes and
 * again every half minute while it lasts, and once that other work shares its keys; the ETA is
 * counted again from the keys' windows.
 */
function waitNotes(handle: BatchHandle, out: NodeJS.WriteStream) {
  let explainedAt = 0;
  let explained: ExplainedProgress | undefined;
  let waitsSaid = '';
  let waitsSaidAt = 0;
  let sharingSaid = false;
  const sayWaits = (all: WaitReason[]) => {
    // Waiting for its fair share is a batch's normal state while other work shares its keys (its
    // rows go on at its share): said once, the first time, never repeated nor said to end.
    const sharing = all.filter((r) => r.kind === 'fair_share');
    if (sharing.length > 0 && !sharingSaid) {
      sharingSaid = true;
      out.write(
        `\nsharing: other work shares the batch's keys (${sharing.map((r) => r.keyId).join(', ')}): its requests take turns at its fair share\n`,
      );
    }
    const reasons = all.filter((r) => r.kind !== 'fair_share');
    const key = reasons.map((r) => `${r.kind}:${r.keyId ?? ''}`).join('|');
    if (key === waitsSaid && Date.now() - waitsSaidAt < NO_WORKER_REPEAT_MS) return;
    if (reasons.length > 0) out.write(`\n${waitLines(reasons).join('\n')}\n`);
    else if (waitsSaid) out.write('\ngoing on: nothing holds the batch back now\n');
    waitsSaid = key;
    waitsSaidAt = Date.now();
  };
  return {
    /** The ETA from the keys' windows (read again every 5 s), or undefined before any reading. */
    async etaOf(p: BatchProgress): Promise<number | undefined> {
      if (Date.now() - explainedAt >= EXPLAIN_EVERY_MS) {
        explainedAt = Date.now();
        explained = await explainProgress(handle.client, p).catch(() => undefined);
        if (explained) sayWaits(explained.waiting);
      }
      return explained?.progress.etaSeconds;
    },
  };
}

/**
 * Shows a live progress bar until the batch ends, then returns its summary. Ctrl-C stops
 * watching (the batch goes on) and resolves undefined.
 */
async function watchBatch(
  handle: BatchHandle,
  opts: WatchOptions = {},
): Promise<BatchSummary | undefined> {
  const out = opts.out ?? process.stderr;
  const bar = progressBar(out, opts.pace);
  const end = batchEndCheck(handle);
  const workers = workerPresence(handle, out);
  const waits = waitNotes(handle, out);
  let detached = false;
  let wake: () => void = () => undefined;
  const onSigint = () => {
    detached = true;
    wake();
  };
  process.once('SIGINT', onSigint);
  try {
    while (!end.ended && !detached) {
      if (await end.due()) break;
      await workers.due();
      if (!workers.none) {
        try {
          const p = await queryProgress(handle);
          // The ETA counts what the keys already spent in their windows (other traffic too).
          const eta = await waits.etaOf(p);
          const { etaBasis: _basis, ...shown } = p;
          bar.show(
            eta !== undefined && p.etaBasis && !p.paused ? { ...shown, etaSeconds: eta } : shown,
          );
        } catch {
          // Between two runs of the batch, or before its first task: ask again shortly.
        }
      }
      await opts.onTick?.();
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 500);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  } finally {
    process.removeListener('SIGINT', onSigint);
    bar.stop(end.ended?.summary);
  }
  if (detached) {
    (
      opts.onDetach ??
      (() => {
        const id = handle.workflowId.replace(/^batch-/, '');
        out.write(`\ndetached: the batch goes on. Watch it again with: pcds batch watch ${id}\n`);
      })
    )();
    return undefined;
  }
  if (end.ended?.error) {
    // A batch that failed says why with its code (store_mismatch, no_keys, ...), as status does.
    const err = callErrorOf(handle.workflowId, end.ended.error);
    throw err instanceof Error ? err : new Error('the batch failed');
  }
  return end.ended?.summary;
}

/** `pcds batch watch <id>`: the live view of a batch until it ends, then its summary. */
export function registerWatchCommand(cmd: Command): void {
  cmd
    .command('watch <id>')
    .description('Live progress bar of a batch until it ends (Ctrl-C detaches)')
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .action(
      action(async (given: string, o: { tenant?: string }) =>
        withBatch(given, o.tenant, async (handle, config) => {
          const status = await batchStatus(handle);
          const named = status.ended
            ? status.summary
            : status.published
              ? undefined
              : status.progress;
          if (!named?.stored) {
            const summary = await watchBatch(handle, { pace: paceNote(config) });
            if (summary) process.stderr.write(`${summaryText(summary)}\n`);
            return;
          }
          // A stored batch's files are written by whoever watches it, here.
          await withStore(config, async (store) => {
            const summary = await watchStoredBatch(handle, store, outputsOf(named), {
              pace: paceNote(config),
            });
            if (summary) process.stderr.write(`${summaryText(summary)}\n`);
          });
        }),
      ),
    );
}
