// How long a batch takes under its keys' limits: the plan shown before it starts and the ETA of
// its progress. Pure and deterministic (the batch workflow's progress query imports it): both
// windows of each key (requests per minute, per hour), the requests a row costs, the keys' shares.
//
// A key sends at its minute limit until its hour window is full, then only as requests leave the
// hour window: a batch of 6,000 requests on one key of 100/min and 1,000/h sends 1,000 in ten
// minutes, then waits for the hour to slide, about five hours in all. A rows-per-second figure
// taken in the first ten minutes says an hour; this model says five. A batch that shares its keys
// with other work (the throttle's fair shares, a person's calls) gets part of each key: the ETA
// takes the part it has been getting (measuredShare).

/** One key's limits and the length of its windows (shortened by the worker's time scale). */
export interface KeyWindows {
  id: string;
  perMinute: number;
  perHour: number;
  minuteMs: number;
  hourMs: number;
  /** Its share of the rows (the pool's weight: its per-minute limit). */
  weight: number;
}

/** Requests a key sent recently: [bucket start (epoch ms), count], buckets one minute long. */
export type SentLog = [number, number][];

/** Counts `count` requests sent at `nowMs` and forgets what no window can see any more. */
export function recordSent(
  log: SentLog,
  nowMs: number,
  count: number,
  windows: Pick<KeyWindows, 'minuteMs' | 'hourMs'>,
): void {
  if (!(count > 0)) return;
  const bucket = Math.floor(nowMs / windows.minuteMs) * windows.minuteMs;
  const last = log[log.length - 1];
  if (last && last[0] === bucket) last[1] += count;
  else log.push([bucket, count]);
  const oldest = nowMs - windows.hourMs - windows.minuteMs;
  while (log.length > 0 && log[0][0] + windows.minuteMs <= oldest) log.shift();
}

/** Simulated slots beyond which the schedule repeats hour after hour and is extrapolated. */
const PERIODS_SIMULATED = 2;

/**
 * How long (ms from `nowMs`) one key takes to send `requests` more, with `sent` already in its
 * windows; undefined when it never can (a limit of zero). Minute by minute: each minute sends up
 * to the minute limit and what the hour window leaves; once the schedule repeats, whole hours
 * are counted at once.
 */
export function sendMs(
  requests: number,
  key: Pick<KeyWindows, 'perMinute' | 'perHour' | 'minuteMs' | 'hourMs'>,
  sent: SentLog = [],
  nowMs = 0,
): number | undefined {
  if (requests <= 0) return 0;
  const m = key.minuteMs;
  const slots = Math.max(1, Math.round(key.hourMs / m));
  // Requests already sent, by the slot (0 = the minute starting now) in which they leave the
  // hour window; and those still in the minute window.
  const leaving = new Array<number>(slots).fill(0);
  let inHour = 0;
  let inMinute = 0;
  for (const [start, count] of sent) {
    const at = start + m / 2;
    if (at <= nowMs - key.hourMs) continue;
    inHour += count;
    if (at > nowMs - m) inMinute += count;
    const slot = Math.min(slots - 1, Math.max(0, Math.floor((at + key.hourMs - nowMs) / m)));
    leaving[slot] += count;
  }
  // Sends of the last `slots` simulated minutes, as a ring.
  const ring = new Array<number>(slots).fill(0);
  let left = requests;
  for (let k = 0; ; k++) {
    const i = k % slots;
    // What leaves the hour window as this minute starts: a past request, or one sent an hour ago.
    if (k < slots) inHour -= leaving[k];
    else inHour -= ring[i];
    ring[i] = 0;
    const cap = Math.max(
      0,
      Math.min(key.perMinute - (k === 0 ? inMinute : 0), key.perHour - Math.max(0, inHour)),
    );
    if (left <= cap) return k * m + (left / key.perMinute) * m;
    ring[i] = cap;
    inHour += cap;
    left -= cap;
    if (k + 1 === PERIODS_SIMULATED * slots) {
      const perPeriod = ring.reduce((a, b) => a + b, 0);
      if (perPeriod <= 0) return undefined;
      // The schedule repeats every hour from here: skip the whole hours, simulate the last.
      const periods = Math.max(0, Math.ceil(left / perPeriod) - 1);
      left -= periods * perPeriod;
      k += periods * slots;
    }
  }
}

/** How long the pool takes: each key sends its share of the requests; the slowest one ends it. */
export function poolSendMs(
  requests: number,
  keys: readonly KeyWindows[],
  sent: Readonly<Record<string, SentLog>> = {},
  nowMs = 0,
): number | undefined {
  if (requests <= 0) return 0;
  const total = keys.reduce((a, k) => a + k.weight, 0);
  if (keys.length === 0 || total <= 0) return undefined;
  let slowest = 0;
  for (const k of keys) {
    const ms = sendMs(Math.ceil((requests * k.weight) / total), k, sent[k.id] ?? [], nowMs);
    if (ms === undefined) return undefined;
    slowest = Math.max(slowest, ms);
  }
  return slowest;
}

/** Requests per row before any is measured: a submit and one poll, or the submit alone with webhooks. */
export const assumedRequestsPerRow = (webhooks: boolean): number => (webhooks ? 1 : 2);

export interface EtaInput {
  nowMs: number;
  paused: boolean;
  /** Rows that still send requests (not done, not duplicates of another row). */
  rowsLeft: number;
  /** As learned from the rows that finished, else assumedRequestsPerRow. */
  requestsPerRow: number;
  /** The keys still in the pool. */
  keys: readonly KeyWindows[];
  /** Each key's requests of the last hour, as the batch counted them. */
  sent: Readonly<Record<string, SentLog>>;
  /** The last rows' jobs run after their submit: their learned duration. */
  tailMs?: number;
  /**
   * The part of each key the batch has been getting (measuredShare of its own log), given when
   * `sent` is the key's whole use, other traffic included (a reader that knows the throttle's
   * state): the key's windows and what they hold are then both taken at that part. Absent for a
   * key, the part is measured from `sent` (the batch's own log).
   */
  shares?: Readonly<Record<string, number>>;
}

/** Shares this close to the whole are the whole: rows in flight are not counted yet, and the reserve. */
const WHOLE_SHARE = 0.85;
const MIN_SHARE = 0.01;

/**
 * The part of a key's windows the batch has been getting: what it sent since it began sending on
 * the key (within the last hour) over what the windows allow in that time. Below 1 while other
 * work shares the key (or the batch's rows ask no faster); 1 until two minutes are measured.
 */
export function measuredShare(
  sent: SentLog,
  key: Pick<KeyWindows, 'perMinute' | 'perHour' | 'minuteMs' | 'hourMs'>,
  nowMs: number,
): number {
  const from = Math.max(nowMs - key.hourMs, sent[0]?.[0] ?? nowMs);
  const span = nowMs - from;
  if (span < 2 * key.minuteMs) return 1;
  let own = 0;
  for (const [start, count] of sent) if (start + key.minuteMs > from) own += count;
  const allowed = Math.min(key.perHour, Math.ceil(span / key.minuteMs) * key.perMinute);
  const share = own / allowed;
  return share >= WHOLE_SHARE ? 1 : Math.max(MIN_SHARE, share);
}

/** Seconds until the batch ends; undefined while paused or when no key can send. */
export function etaSeconds(e: EtaInput): number | undefined {
  if (e.paused) return undefined;
  if (e.rowsLeft <= 0) return 0;
  // Each key as the batch gets it: its windows times the share it has been getting of them (and,
  // when `sent` is the key's whole use, that share of what the windows hold).
  const sent: Record<string, SentLog> = {};
  const keys = e.keys.map((k) => {
    const given = e.shares?.[k.id];
    const share = given ?? measuredShare(e.sent[k.id] ?? [], k, e.nowMs);
    const log = e.sent[k.id] ?? [];
    sent[k.id] =
      given !== undefined && share < 1
        ? log.map(([at, n]): [number, number] => [at, n * share])
        : log;
    return share >= 1
      ? k
      : {
          ...k,
          perMinute: Math.max(1, Math.floor(k.perMinute * share)),
          perHour: Math.max(1, Math.floor(k.perHour * share)),
        };
  });
  const ms = poolSendMs(Math.ceil(e.rowsLeft * e.requestsPerRow), keys, sent, e.nowMs);
  return ms === undefined ? undefined : Math.ceil((ms + (e.tailMs ?? 0)) / 1000);
}

/** Rows with something to say of some of their values, and how often per parameter. */
export interface FieldCounts {
  rows: number;
  fields: Record<string, number>;
}

/** How the input's bytes were read as text (batch-io/text-encoding.ts). */
export interface InputText {
  /** The encoding the caller named, else utf-8. */
  encoding: string;
  /** Rows that were not UTF-8, read as `readAs` (no encoding named). */
  notUtf8?: { rows: number; readAs: string };
  /** Valid rows sent without a value that could not be read in the encoding. */
  unreadable: FieldCounts;
}

export interface PlanInput {
  /** Data rows of the input. */
  rows: number;
  /** Valid rows trimmed (contract/trim.ts); none when absent. */
  trimmed?: FieldCounts;
  /** How the input was read; UTF-8 throughout when absent. */
  text?: InputText;
  /** Rows that repeat an earlier row (they share its call: no request). */
  duplicates: number;
  /** Rows that fail validation (no request). */
  invalid: number;
  /** Rows the result cache would answer (no request, no credit), and the found among them. */
  cached?: number;
  cachedFound?: number;
  webhooks: boolean;
  keys: readonly KeyWindows[];
  /** Typical credits of one found row (batch/cost.ts). */
  creditsPerRow: number;
  /**
   * How many times faster than the service the windows run (1 for the real service): hours are
   * reported in the service's time.
   */
  timeScale: number;
  /**
   * What each key already has in its windows (all traffic on it, as its throttle knows it), as
   * of `nowMs`: the plan starts from there instead of from empty windows.
   */
  sent?: Readonly<Record<string, SentLog>>;
  nowMs?: number;
}

export interface BatchPlan {
  rows: number;
  duplicates: number;
  invalid: number;
  /** Valid rows with a value that had whitespace around it: they are sent trimmed. */
  trimmed: FieldCounts;
  /** How the input's bytes were read as text. */
  text: InputText;
  /** Rows the result cache would answer: no request, no credit. */
  cached?: number;
  /** Requests and credits the cache saves (credits: the cached rows that were found). */
  savedRequests?: number;
  savedCredits?: number;
  /** Rows that send requests. */
  sent: number;
  requestsPerRow: number;
  requests: number;
  keys: number;
  /** Wall-clock time the limits imply (ms), undefined when no key can send. */
  durationMs?: number;
  /** The same in the service's hours (durationMs times the time scale). */
  hours?: number;
  /** Credits if every row sent is found (empty results are free). */
  credits: number;
  /** What would shorten it, each with the hours it would take. */
  shorter: { with: 'one more key' | 'webhooks'; hours: number }[];
}

const hoursOf = (ms: number | undefined, timeScale: number) =>
  ms === undefined ? undefined : (ms * timeScale) / 3_600_000;

export function planBatch(p: PlanInput): BatchPlan {
  const cached = p.cached ?? 0;
  const sent = Math.max(0, p.rows - p.duplicates - p.invalid - cached);
  const requestsPerRow = assumedRequestsPerRow(p.webhooks);
  const requests = sent * requestsPerRow;
  const used = p.sent ?? {};
  const nowMs = p.nowMs ?? 0;
  const durationMs = poolSendMs(requests, p.keys, used, nowMs);
  const shorter: BatchPlan['shorter'] = [];
  const like = p.keys[0];
  if (like && durationMs !== undefined && durationMs > 0) {
    const more = hoursOf(
      poolSendMs(requests, [...p.keys, { ...like, id: '+1' }], used, nowMs),
      p.timeScale,
    );
    if (more !== undefined) shorter.push({ with: 'one more key', hours: more });
    if (!p.webhooks) {
      const hooked = hoursOf(
        poolSendMs(sent * assumedRequestsPerRow(true), p.keys, used, nowMs),
        p.timeScale,
      );
      if (hooked !== undefined) shorter.push({ with: 'webhooks', hours: hooked });
    }
  }
  return {
    rows: p.rows,
    duplicates: p.duplicates,
    invalid: p.invalid,
    trimmed: p.trimmed ?? { rows: 0, fields: {} },
    text: p.text ?? { encoding: 'utf-8', unreadable: { rows: 0, fields: {} } },
    ...(p.cached !== undefined
      ? {
          cached,
          savedRequests: cached * requestsPerRow,
          savedCredits: (p.cachedFound ?? 0) * p.creditsPerRow,
        }
      : {}),
    sent,
    requestsPerRow,
    requests,
    keys: p.keys.length,
    ...(durationMs !== undefined ? { durationMs, hours: hoursOf(durationMs, p.timeScale) } : {}),
    credits: sent * p.creditsPerRow,
    shorter,
  };
}

/** The key windows of a configured key: its limits, the windows shortened like the throttle's. */
export function keyWindows(
  k: { id: string; perMinute: number; perHour: number },
  timeScale: number,
): KeyWindows {
  return {
    id: k.id,
    perMinute: k.perMinute,
    perHour: k.perHour,
    minuteMs: 60_000 / timeScale,
    hourMs: 3_600_000 / timeScale,
    weight: Math.max(1, k.perMinute),
  };
}
