// `pcds doctor` and the client's `doctor()`: from the settings a process is given, check that its
// setup works and matches its workers' (Temporal reachable, a worker polling, the same store,
// the same payload key and id secret, the service's keys, the webhook receiver), each result
// with the fix. Read-only but for what opening the store does (its migrations) and one GET /usage
// per key, through the shared throttle like every request.
import { statSync } from 'node:fs';
import type { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { keyringFromSettings } from '../codec/settings.js';
import { loadConfig, type Config } from '../config.js';
import { backgroundRequester } from '../contract/index.js';
import { createServiceClients } from '../http/service-clients.js';
import { readUsage } from '../http/usage-read.js';
import { openStoreFromSettings, BatchStore, type Store } from '../store/index.js';
import type { WorkerReport } from '../store/worker-reports.js';
import { connectTemporalClient, temporalConnectionOptions } from '../temporal/connection.js';
import { temporalClient } from '../temporal/data-converter.js';
import { idSecretFromSettings } from '../codec/idempotency.js';
import { presenceOf, POLLER_FRESH_MS } from '../temporal/pollers.js';
import { unthrottled } from '../throttle/permits.js';
import { packageVersion } from '../version.js';
import { permitGateFromConfig } from '../worker/permit-gate.js';
import { secretFingerprints } from '../worker/self-report.js';

const { TaskQueueType } = proto.temporal.api.enums.v1;

export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip';

export interface DoctorCheck {
  /** Stable name, for scripts: settings, encryption_key, id_secret, temporal, workers, store, same_store, same_secrets, service, webhooks. */
  id: string;
  status: CheckStatus;
  /** What was found (never a secret or a value of person data). */
  detail: string;
  /** What to do, for a failure or a warning. */
  fix?: string;
}

export interface DoctorReport {
  /** No check failed (warnings allowed). */
  ok: boolean;
  checks: DoctorCheck[];
}

export interface DoctorOptions {
  /** Bound of each network step (connect, describe, a permit for /usage, the receiver). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** A secret file others can read: refused in production (`chmod 600`). */
function fileModeProblem(path: string, setting: string): DoctorCheck | undefined {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch {
    return {
      id: setting === 'PCDS_ENCRYPTION_KEY_FILE' ? 'encryption_key' : 'id_secret',
      status: 'fail',
      detail: `${setting}: ${path} cannot be read`,
      fix: `make ${path} readable by the user this process runs as (and by no one else: chmod 600), or fix ${setting}`,
    };
  }
  if ((mode & 0o077) === 0) return undefined;
  return {
    id: setting === 'PCDS_ENCRYPTION_KEY_FILE' ? 'encryption_key' : 'id_secret',
    status: 'fail',
    detail: `${setting}: ${path} is readable by others (mode ${(mode & 0o777).toString(8)})`,
    fix: `chmod 600 ${path} (its owner only)`,
  };
}

function localSecrets(config: Config): DoctorCheck[] {
  const checks: DoctorCheck[] = [];
  if (config.PCDS_ENCRYPTION === 'off')
    checks.push({
      id: 'encryption_key',
      status: 'warn',
      detail: 'PCDS_ENCRYPTION=off: payloads (person data) go to Temporal in clear',
      fix: 'set PCDS_ENCRYPTION_KEY or PCDS_ENCRYPTION_KEY_FILE (32 random bytes, base64) and drop PCDS_ENCRYPTION=off',
    });
  else {
    const mode = config.PCDS_ENCRYPTION_KEY_FILE
      ? fileModeProblem(config.PCDS_ENCRYPTION_KEY_FILE, 'PCDS_ENCRYPTION_KEY_FILE')
      : undefined;
    try {
      const keyring = keyringFromSettings(config)!;
      const fp = secretFingerprints(config).encryption;
      checks.push(
        mode ?? {
          id: 'encryption_key',
          status: 'ok',
          detail: `payload key ${keyring.currentKeyId} (fingerprint ${fp?.fingerprint ?? '?'})${keyring.keys.size > 1 ? `, ${keyring.keys.size - 1} previous key(s)` : ''}`,
        },
      );
    } catch (err) {
      checks.push(
        mode ?? {
          id: 'encryption_key',
          status: 'fail',
          detail: (err as Error).message,
          fix: 'set PCDS_ENCRYPTION_KEY (32 random bytes in base64: openssl rand -base64 32) or PCDS_ENCRYPTION_KEY_FILE, the same in every process',
        },
      );
    }
  }
  const mode = config.PCDS_ID_SECRET_FILE
    ? fileModeProblem(config.PCDS_ID_SECRET_FILE, 'PCDS_ID_SECRET_FILE')
    : undefined;
  try {
    const secret = idSecretFromSettings(config);
    const fp = secretFingerprints(config).idSecret;
    checks.push(
      mode ??
        (secret
          ? { id: 'id_secret', status: 'ok', detail: `id secret (fingerprint ${fp?.fingerprint})` }
          : {
              id: 'id_secret',
              status: 'fail',
              detail:
                'no id secret: idempotency keys are refused and the store cannot key its lookups',
              fix: 'set PCDS_ID_SECRET (32+ characters: openssl rand -base64 32) or PCDS_ID_SECRET_FILE, the same in every process',
            }),
    );
  } catch (err) {
    checks.push(
      mode ?? {
        id: 'id_secret',
        status: 'fail',
        detail: (err as Error).message,
        fix: 'set PCDS_ID_SECRET (32+ characters) or PCDS_ID_SECRET_FILE, the same in every process',
      },
    );
  }
  return checks;
}

async function reachTemporal(
  config: Config,
  timeoutMs: number,
): Promise<{ check: DoctorCheck; connection?: Connection; client?: Client }> {
  const options = temporalConnectionOptions(config);
  const how =
    options.apiKey !== undefined
      ? 'TLS with an API key'
      : typeof options.tls === 'object'
        ? options.tls.cert
          ? 'mutual TLS'
          : 'TLS'
        : options.tls === true
          ? 'TLS'
          : 'plain';
  let connection: Connection;
  try {
    connection = await connectTemporalClient({ ...options, connectTimeoutMs: timeoutMs });
  } catch (err) {
    return {
      check: {
        id: 'temporal',
        status: 'fail',
        detail: (err as Error).message,
        fix: 'fix the PCDS_TEMPORAL_* setting the message names (address, TLS files, API key), or start the server',
      },
    };
  }
  try {
    await connection.withDeadline(Date.now() + timeoutMs, () =>
      connection.workflowService.describeNamespace({ namespace: config.PCDS_TEMPORAL_NAMESPACE }),
    );
  } catch (err) {
    await connection.close();
    return {
      check: {
        id: 'temporal',
        status: 'fail',
        detail: `Temporal at ${config.PCDS_TEMPORAL_ADDRESS} answers, but namespace ${config.PCDS_TEMPORAL_NAMESPACE} cannot be used: ${(err as Error).message}`,
        fix: 'check PCDS_TEMPORAL_NAMESPACE (Temporal Cloud: name.account) and what the certificate or API key may access',
      },
    };
  }
  // A client needs the payload key; one refused (a key file open to others) is the key's check.
  let client: Client | undefined;
  try {
    client = temporalClient(connection, config);
  } catch {
    client = undefined;
  }
  return {
    check: {
      id: 'temporal',
      status: 'ok',
      detail: `${config.PCDS_TEMPORAL_ADDRESS}, namespace ${config.PCDS_TEMPORAL_NAMESPACE}, ${how}`,
    },
    connection,
    ...(client ? { client } : {}),
  };
}

interface Poller {
  identity: string;
  lastMsAgo: number;
}

async function pollersOf(client: Client, taskQueue: string, timeoutMs: number): Promise<Poller[]> {
  const now = Date.now();
  const seen = new Map<string, number>();
  for (const type of [
    TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
  ]) {
    const reply = await client.connection.withDeadline(Date.now() + timeoutMs, () =>
      client.workflowService.describeTaskQueue({
        namespace: client.options.namespace,
        taskQueue: { name: taskQueue },
        taskQueueType: type,
      }),
    );
    for (const p of reply.pollers ?? []) {
      const presence = presenceOf([p], now);
      if (presence.state !== 'polled' || !p.identity) continue;
      const ago = presence.lastPollMsAgo;
      seen.set(p.identity, Math.min(ago, seen.get(p.identity) ?? Infinity));
    }
  }
  return [...seen].map(([identity, lastMsAgo]) => ({ identity, lastMsAgo }));
}

function workersCheck(taskQueue: string, pollers: Poller[], reports: WorkerReport[]): DoctorCheck {
  if (pollers.length === 0)
    return {
      id: 'workers',
      status: 'fail',
      detail: `no worker is polling task queue ${taskQueue} (none in the last ${POLLER_FRESH_MS / 1000} s)`,
      fix: `start one: pcds worker, with PCDS_TASK_QUEUE=${taskQueue} and the same PCDS_TEMPORAL_ADDRESS and PCDS_TEMPORAL_NAMESPACE`,
    };
  const mine = packageVersion();
  const byId = new Map(reports.map((r) => [r.identity, r]));
  const named = pollers.map((p) => {
    const v = byId.get(p.identity)?.version;
    return `${p.identity}${v ? ` (${v})` : ''}`;
  });
  const other = reports.filter((r) => r.version !== mine);
  return {
    id: 'workers',
    status: other.length ? 'warn' : 'ok',
    detail: `${pollers.length} polling task queue ${taskQueue}: ${named.join(', ')}`,
    ...(other.length
      ? {
          fix: `this process runs ${mine}, ${other.map((r) => `${r.identity} runs ${r.version}`).join(', ')}: upgrade them together (see the upgrade notes)`,
        }
      : {}),
  };
}

/** The pollers that reported into this store, and those that did not (they use another one). */
function sameStoreCheck(store: Store, pollers: Poller[], reports: WorkerReport[]): DoctorCheck {
  const byId = new Set(reports.map((r) => r.identity));
  const elsewhere = pollers.filter((p) => !byId.has(p.identity));
  if (pollers.length === 0)
    return { id: 'same_store', status: 'skip', detail: 'no worker polls: nothing to compare' };
  if (elsewhere.length === 0)
    return {
      id: 'same_store',
      status: 'ok',
      detail: `every polling worker reports into this store (${store.location.shown})`,
    };
  return {
    id: 'same_store',
    status: 'fail',
    detail: `${elsewhere.map((p) => p.identity).join(', ')} ${elsewhere.length === 1 ? 'polls' : 'poll'} the task queue but never reported into this store (${store.location.shown}): ${elsewhere.length === 1 ? 'it uses' : 'they use'} another store, or a release that does not report`,
    fix: 'set PCDS_STORE_URL to the same store on this process and on every worker (batches started here would end with store_mismatch)',
  };
}

function sameSecretsCheck(config: Config, reports: WorkerReport[]): DoctorCheck {
  if (reports.length === 0)
    return {
      id: 'same_secrets',
      status: 'skip',
      detail: 'no worker reported into this store: nothing to compare',
    };
  const mine = secretFingerprints(config);
  const problems: string[] = [];
  for (const r of reports) {
    const a = mine.encryption;
    const b = r.encryption;
    if (
      (a && !b) ||
      (!a && b) ||
      (a && b && (a.keyId !== b.keyId || a.fingerprint !== b.fingerprint))
    )
      problems.push(
        `${r.identity} seals payloads with ${b ? `key ${b.keyId} (fingerprint ${b.fingerprint})` : 'no key (PCDS_ENCRYPTION=off)'}, this process with ${a ? `key ${a.keyId} (fingerprint ${a.fingerprint})` : 'no key'}`,
      );
    if (mine.idSecret?.fingerprint !== r.idSecret?.fingerprint)
      problems.push(
        `${r.identity}'s id secret ${r.idSecret ? `has fingerprint ${r.idSecret.fingerprint}` : 'is not set'}, this process's ${mine.idSecret ? `has ${mine.idSecret.fingerprint}` : 'is not set'}`,
      );
  }
  return problems.length
    ? {
        id: 'same_secrets',
        status: 'fail',
        detail: problems.join('; '),
        fix: 'give every process the same PCDS_ENCRYPTION_KEY (or _FILE) with the same PCDS_ENCRYPTION_KEY_ID, and the same PCDS_ID_SECRET (or _FILE)',
      }
    : {
        id: 'same_secrets',
        status: 'ok',
        detail: `payload key and id secret match the ${reports.length} worker(s) of this store (by fingerprint)`,
      };
}

async function serviceChecks(
  config: Config,
  connection: Connection | undefined,
  timeoutMs: number,
): Promise<DoctorCheck[]> {
  if (config.keys.length === 0)
    return [
      {
        id: 'service',
        status: 'skip',
        detail:
          'no API key in this process (PCDS_API_KEY / PCDS_API_KEYS): the workers hold them; run pcds doctor on their hosts',
      },
    ];
  const services = createServiceClients(config);
  const gate =
    config.PCDS_THROTTLE === 'off' || !connection
      ? unthrottled
      : permitGateFromConfig(config, connection, config.PCDS_TASK_QUEUE);
  try {
    return await Promise.all(
      config.keys.map(async (k): Promise<DoctorCheck> => {
        const abort = new AbortController();
        const timer = setTimeout(() => abort.abort(), timeoutMs);
        try {
          const usage = await readUsage(services, gate, {
            requester: backgroundRequester(),
            keyId: k.id,
            signal: abort.signal,
          });
          const limits = (usage.limits ?? {}) as Record<string, unknown>;
          const credits =
            limits.is_unlimited === true
              ? 'unlimited credits'
              : typeof limits.available_credits === 'number'
                ? `${limits.available_credits} credits available`
                : 'credits not stated';
          const perMinute = k.perMinute ?? config.PCDS_RATE_PER_MINUTE;
          const perHour = k.perHour ?? config.PCDS_RATE_PER_HOUR;
          return {
            id: 'service',
            status: limits.available_credits === 0 ? 'warn' : 'ok',
            detail: `key ${k.id} at ${config.PCDS_BASE_URL}: ${perMinute}/min, ${perHour}/h; ${credits}`,
            ...(limits.available_credits === 0
              ? { fix: `add credits to the account of key ${k.id}` }
              : {}),
          };
        } catch (err) {
          return {
            id: 'service',
            status: 'fail',
            detail: abort.signal.aborted
              ? `key ${k.id}: GET /usage got no permit from the shared throttle within ${Math.round(timeoutMs / 1000)} s (no worker runs the key's throttle, or its window is full)`
              : `key ${k.id} at ${config.PCDS_BASE_URL}: ${(err as Error).message}`,
            fix: abort.signal.aborted
              ? `start a worker on task queue ${config.PCDS_TASK_QUEUE}; pcds throttle status shows the key's windows`
              : 'check PCDS_BASE_URL and the key and secret (PCDS_API_KEY / PCDS_API_SECRET or PCDS_API_KEYS)',
          };
        } finally {
          clearTimeout(timer);
        }
      }),
    );
  } finally {
    await services.close();
  }
}

async function webhooksCheck(config: Config, timeoutMs: number): Promise<DoctorCheck> {
  const publicUrl = config.PCDS_WEBHOOK_PUBLIC_URL;
  if (!publicUrl)
    return { id: 'webhooks', status: 'skip', detail: 'no PCDS_WEBHOOK_PUBLIC_URL: calls poll' };
  const url = `${publicUrl.replace(/\/+$/, '')}/healthz`;
  try {
    const reply = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (reply.ok) return { id: 'webhooks', status: 'ok', detail: `the receiver answers at ${url}` };
    return {
      id: 'webhooks',
      status: 'fail',
      detail: `${url} answered HTTP ${reply.status}, not the receiver`,
      fix: 'route PCDS_WEBHOOK_PUBLIC_URL to the receiver (PCDS_WEBHOOK_HOST/PORT of pcds worker or pcds webhooks)',
    };
  } catch (err) {
    return {
      id: 'webhooks',
      status: 'fail',
      detail: `nothing answers at ${url} (${(err as Error).message})`,
      fix: 'run the receiver (pcds worker with PCDS_WEBHOOK_RECEIVER=in-worker, or pcds webhooks) and make PCDS_WEBHOOK_PUBLIC_URL reach it',
    };
  }
}

/** Every check, from the settings in `env`. */
export async function runDoctor(
  env: NodeJS.ProcessEnv = process.env,
  opts: DoctorOptions = {},
): Promise<DoctorReport> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const checks: DoctorCheck[] = [];
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    checks.push({
      id: 'settings',
      status: 'fail',
      detail: (err as Error).message,
      fix: 'fix the setting the message names (see the configuration table)',
    });
    return { ok: false, checks };
  }
  checks.push(...localSecrets(config));
  const temporal = await reachTemporal(config, timeoutMs);
  checks.push(temporal.check);
  let pollers: Poller[] = [];
  try {
    if (temporal.client)
      pollers = await pollersOf(temporal.client, config.PCDS_TASK_QUEUE, timeoutMs);
  } catch (err) {
    checks.push({
      id: 'workers',
      status: 'warn',
      detail: `the task queue could not be described: ${(err as Error).message}`,
    });
  }
  let store: Store | undefined;
  try {
    store = await openStoreFromSettings(config);
    checks.push({
      id: 'store',
      status: 'ok',
      detail: `${store.location.shown} (${store.engine}, store id ${store.id?.slice(0, 8) ?? '?'}), migrated`,
    });
  } catch (err) {
    checks.push({
      id: 'store',
      status: 'fail',
      detail: (err as Error).message,
      fix: "set PCDS_STORE_URL (postgres://user:password@host:5432/db, the same as the workers') and check the database is up and the role may create tables",
    });
  }
  try {
    const reports = store
      ? await new BatchStore(store).workerReports({
          taskQueue: config.PCDS_TASK_QUEUE,
          namespace: config.PCDS_TEMPORAL_NAMESPACE,
        })
      : [];
    if (temporal.client) checks.push(workersCheck(config.PCDS_TASK_QUEUE, pollers, reports));
    if (store && temporal.client) checks.push(sameStoreCheck(store, pollers, reports));
    if (store) checks.push(sameSecretsCheck(config, reports));
    checks.push(...(await serviceChecks(config, temporal.connection, timeoutMs)));
    checks.push(await webhooksCheck(config, timeoutMs));
  } finally {
    await store?.close();
    await temporal.connection?.close();
  }
  return { ok: !checks.some((c) => c.status === 'fail'), checks };
}

/** The report for people: one line a check, its fix under it. */
export function doctorText(report: DoctorReport): string[] {
  const mark: Record<CheckStatus, string> = {
    ok: 'ok  ',
    warn: 'WARN',
    fail: 'FAIL',
    skip: '--  ',
  };
  const lines: string[] = [];
  for (const c of report.checks) {
    lines.push(`${mark[c.status]} ${c.id}: ${c.detail}`);
    if (c.fix && c.status !== 'ok') lines.push(`     fix: ${c.fix}`);
  }
  const failed = report.checks.filter((c) => c.status === 'fail').length;
  lines.push(failed ? `${failed} problem${failed === 1 ? '' : 's'} found` : 'no problem found');
  return lines;
}
