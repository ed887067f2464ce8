// The plan a batch start prints (alone with --dry-run): its rows and requests, the hours its
// keys' limits imply (counting what the keys already spent), and its credits against GET /usage.
import { describeEstimate, estimateCost } from '../../batch/cost.js';
import {
  keyWindows,
  type BatchPlan,
  type FieldCounts,
  type InputText,
  type KeyWindows,
} from '../../batch/plan.js';
import type { PreparedBatch } from '../../client/batch-launch.js';
import {
  planOfCounts,
  planPreparedBatch,
  type CacheHitCounter,
  type InputCounts,
} from '../../client/batch-plan-input.js';
import { readKeyWindowUse, type KeyWindowUse } from '../../client/key-window-use.js';
import type { Config } from '../../config.js';
import { backgroundRequester } from '../../contract/index.js';
import { connectTemporalClient, temporalConnectionOptions } from '../../temporal/connection.js';
import { temporalClient } from '../../temporal/data-converter.js';
import { checkWorkers, noWorkerMessage } from '../../temporal/pollers.js';
import { connectTemporal } from '../temporal-connection.js';
import { createUsageReader, slowPermitNote } from '../usage.js';
import { fmtSeconds } from './text.js';

/** The keys a batch will run on, as this machine's configuration knows them. */
function planKeys(
  config: Config,
  keyIds: string[] | undefined,
): { keys: KeyWindows[]; assumed: boolean } {
  const scale = config.PCDS_THROTTLE_TIME_SCALE;
  const limits = (k: { id: string; perMinute?: number; perHour?: number }) =>
    keyWindows(
      {
        id: k.id,
        perMinute: k.perMinute ?? config.PCDS_RATE_PER_MINUTE,
        perHour: k.perHour ?? config.PCDS_RATE_PER_HOUR,
      },
      scale,
    );
  const known = config.keys.filter((k) => !keyIds?.length || keyIds.includes(k.id));
  if (known.length > 0) return { keys: known.map(limits), assumed: false };
  // The workers hold the keys: one key (or each named one) at the configured default limits.
  return {
    keys: (keyIds?.length ? keyIds : ['default']).map((id) => limits({ id })),
    assumed: true,
  };
}

type PlannedBatch = {
  plan: BatchPlan;
  keys: KeyWindows[];
  assumed: boolean;
  use?: Map<string, KeyWindowUse>;
};

/**
 * The keys a plan counts on, and what they already spent (other work on them included): a key
 * whose hour is nearly spent sends this batch's first requests only as its window slides.
 */
async function planLimitsOf(config: Config, prepared: PreparedBatch) {
  const { keys, assumed } = planKeys(config, prepared.input.keyIds);
  const use = await keyUseForPlan(
    config,
    keys.map((k) => k.id),
  );
  const sent = use && Object.fromEntries([...use].map(([id, u]) => [id, u.sent]));
  const limits = {
    keys,
    timeScale: config.PCDS_THROTTLE_TIME_SCALE,
    ...(sent && Object.keys(sent).length ? { sent, nowMs: Date.now() } : {}),
  };
  return { keys, assumed, limits, ...(use?.size ? { use } : {}) };
}

/** What a batch will take: its rows and requests, the hours its keys' limits imply, its credits. */
export async function batchPlanOf(
  config: Config,
  prepared: PreparedBatch,
  cacheHits?: CacheHitCounter,
): Promise<PlannedBatch> {
  const { limits, ...planned } = await planLimitsOf(config, prepared);
  return { plan: await planPreparedBatch(prepared, limits, cacheHits), ...planned };
}

/** The same, from counts of the batch's rows (as the store gives them once they are loaded). */
export async function batchPlanFromCounts(
  config: Config,
  prepared: PreparedBatch,
  counts: InputCounts,
): Promise<PlannedBatch> {
  const { limits, ...planned } = await planLimitsOf(config, prepared);
  return { plan: planOfCounts(prepared, counts, limits), ...planned };
}

/** How long a plan waits for Temporal and the keys' throttles before planning without them. */
const PLAN_USE_TIMEOUT_MS = 3_000;

/**
 * The keys' windows as their throttles know them, for a plan; undefined when the throttle is off
 * or Temporal cannot be reached within seconds (the plan then takes the windows as empty).
 */
async function keyUseForPlan(
  config: Config,
  keyIds: string[],
): Promise<Map<string, KeyWindowUse> | undefined> {
  if (config.PCDS_THROTTLE === 'off' || keyIds.length === 0) return undefined;
  let connection: Awaited<ReturnType<typeof connectTemporalClient>> | undefined;
  try {
    connection = await connectTemporalClient({
      ...temporalConnectionOptions(config),
      connectTimeoutMs: PLAN_USE_TIMEOUT_MS,
      explain: false,
    });
    return await readKeyWindowUse(temporalClient(connection, config).workflow, keyIds, {
      timeoutMs: PLAN_USE_TIMEOUT_MS,
    });
  } catch {
    return undefined;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

/** The plan's lines, with the credit check against GET /usage unless --no-estimate. */
export async function printPlan(
  config: Config,
  prepared: PreparedBatch,
  planned: PlannedBatch,
  o: { webhooks?: boolean; estimate: boolean },
  out: NodeJS.WritableStream,
): Promise<void> {
  const lines = planText(
    planned,
    config.PCDS_THROTTLE_TIME_SCALE,
    o.webhooks === true,
    o.estimate ? await usageNote(config, prepared, planned.plan.sent) : undefined,
  );
  out.write(`${lines.join('\n')}\n`);
}

const fmtHours = (h: number | undefined, timeScale: number) => {
  if (h === undefined) return 'never (a key has no room at all)';
  const service = fmtSeconds(Math.round(h * 3600));
  return timeScale === 1
    ? `about ${service}`
    : `about ${service} of the service's time (${fmtSeconds(Math.ceil((h * 3600) / timeScale))} here, ${timeScale} times faster: PCDS_THROTTLE_TIME_SCALE)`;
};

const rowsText = (n: number) => `${n} row${n === 1 ? '' : 's'}`;
const fieldsText = (counts: FieldCounts) =>
  Object.entries(counts.fields)
    .map(([field, n]) => `${field} ${n}`)
    .join(', ');

/** "trimmed: 6 rows had spaces around a value (email 6, name 2): sent without them". */
const trimmedText = (trimmed: FieldCounts): string =>
  `trimmed: ${rowsText(trimmed.rows)} had spaces around a value (${fieldsText(trimmed)}): sent without them`;

/** How the input was read, when that is worth a line: not UTF-8 throughout, or values lost. */
function inputTextLines(text: InputText): string[] {
  const lines: string[] = [];
  if (text.notUtf8)
    lines.push(
      `encoding: ${rowsText(text.notUtf8.rows)} not UTF-8, read as ${text.notUtf8.readAs} (a spreadsheet's CSV on Windows); if the file is in another encoding, name it with --encoding`,
    );
  else if (text.encoding !== 'utf-8') lines.push(`encoding: ${text.encoding} (--encoding)`);
  if (text.unreadable.rows)
    lines.push(
      `unreadable: ${rowsText(text.unreadable.rows)} had a value that could not be read as ${text.notUtf8 ? 'UTF-8 or ' + text.notUtf8.readAs : text.encoding} (${fieldsText(text.unreadable)}): sent without it`,
    );
  return lines;
}

/** The plan, for people: a few lines, then what would shorten it. */
export function planText(
  { plan, keys, assumed, use }: PlannedBatch,
  timeScale: number,
  webhooks: boolean,
  /** The credit check against the account (GET /usage), in place of the plain estimate. */
  creditsNote?: string,
): string[] {
  const notSent = [
    ...(plan.duplicates ? [`${plan.duplicates} duplicates`] : []),
    ...(plan.invalid ? [`${plan.invalid} invalid`] : []),
    ...(plan.cached ? [`${plan.cached} answered by the result cache`] : []),
  ];
  const limits = [...new Set(keys.map((k) => `${k.perMinute}/min, ${k.perHour}/h`))].join('; ');
  const perRow = webhooks ? 'submit, result by webhook' : 'submit + first poll, timed to the job';
  return [
    `plan: ${plan.rows} rows${notSent.length ? ` (${notSent.join(', ')}: not sent)` : ''}, ${plan.sent} sent x ~${plan.requestsPerRow} request${plan.requestsPerRow === 1 ? '' : 's'} (${perRow}) = ${plan.requests} requests`,
    `  ${plan.keys} key${plan.keys === 1 ? '' : 's'} (${limits} each${assumed ? '; no keys configured here: the default limits assumed' : ''}): ${fmtHours(plan.hours, timeScale)} at the limits`,
    ...(use?.size
      ? [
          `  counted from what the keys already sent: ${[...use.values()]
            .map(
              (u) =>
                `${u.keyId} ${u.hour.used}/${u.hour.limit} this hour` +
                (u.hour.used >= u.hour.limit ? ' (full)' : ''),
            )
            .join(', ')}`,
        ]
      : []),
    `  ${creditsNote ?? `credits: up to ${plan.credits} (every row sent found; empty results are free)`}`,
    ...[
      ...(plan.trimmed.rows ? [trimmedText(plan.trimmed)] : []),
      ...inputTextLines(plan.text),
    ].map((line) => `  ${line}`),
    ...(plan.cached
      ? [
          `  cache: ${plan.cached} row${plan.cached === 1 ? '' : 's'} from the result cache save ~${plan.savedRequests} requests and ~${plan.savedCredits} credits (--refresh fetches them again)`,
        ]
      : []),
    ...(plan.shorter.length
      ? [
          `  shorter: ${plan.shorter
            .map((s) =>
              s.with === 'one more key'
                ? `one more key in the pool (PCDS_API_KEYS), about ${fmtSeconds(Math.round(s.hours * 3600))}`
                : `--webhooks (1 request a row), about ${fmtSeconds(Math.round(s.hours * 3600))}`,
            )
            .join('; ')}`,
        ]
      : []),
  ];
}

/** How long a plan waits for its credit read: a plan answers within seconds, read or not. */
const PLAN_USAGE_TIMEOUT_MS = 10_000;

/**
 * Why a plan's credit read would only wait, or undefined when it may be tried: GET /usage takes a
 * permit from the shared throttle, which a worker runs, so with no worker polling the task queue
 * (or no Temporal to ask) the credits are unknown.
 */
async function creditsUnknownBecause(config: Config): Promise<string | undefined> {
  if (config.PCDS_THROTTLE === 'off') return undefined;
  let connected: Awaited<ReturnType<typeof connectTemporal>>;
  try {
    connected = await connectTemporal(config);
  } catch (err) {
    return (err as Error).message;
  }
  try {
    const presence = await checkWorkers(connected.client, config.PCDS_TASK_QUEUE);
    return presence.state === 'none'
      ? `${noWorkerMessage(config.PCDS_TASK_QUEUE)}, and GET /usage waits for a permit of the shared throttle, which a worker grants`
      : undefined;
  } finally {
    await connected.close();
  }
}

async function usageNote(config: Config, prepared: PreparedBatch, rows: number): Promise<string> {
  const estimate = estimateCost(prepared.endpoint, rows);
  if (config.keys.length === 0) return describeEstimate(estimate, undefined);
  const unknown = (why: string) =>
    `${describeEstimate(estimate, undefined)}; available credits: unknown (${why})`;
  // A plan needs no worker: without one the read would wait for a permit, so it is not tried.
  const because = await creditsUnknownBecause(config);
  if (because) return unknown(because);
  // Through the shared throttle like every request: a batch start never crowds out running work.
  const reader = createUsageReader(config, { onSlowPermit: slowPermitNote(config) });
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), PLAN_USAGE_TIMEOUT_MS);
  try {
    // A plan's credit read is background work: it never goes ahead of a person's call.
    // The ask itself waits for the throttle's answer: the deadline ends the wait either way (the
    // reader's connection closes after it).
    const late = new Promise<never>((_, reject) =>
      deadline.signal.addEventListener('abort', () => reject(new Error('late')), { once: true }),
    );
    const usage = await Promise.race([
      reader.read(
        undefined,
        prepared.input.keyIds?.[0],
        backgroundRequester(prepared.input.tenant),
        deadline.signal,
      ),
      late,
    ]);
    const limits = (usage.limits ?? {}) as { available_credits?: unknown; is_unlimited?: unknown };
    const available =
      limits.is_unlimited === true
        ? 'unlimited'
        : typeof limits.available_credits === 'number'
          ? limits.available_credits
          : undefined;
    return describeEstimate(estimate, available);
  } catch (err) {
    if (deadline.signal.aborted)
      return unknown(
        `no permit of the shared throttle within ${PLAN_USAGE_TIMEOUT_MS / 1000} s: the key's windows are full, or no worker polls task queue ${config.PCDS_TASK_QUEUE}`,
      );
    return `${describeEstimate(estimate, undefined)}; could not read GET /usage: ${(err as Error).message}`;
  } finally {
    clearTimeout(timer);
    await reader.close();
  }
}
