// The production topology on one machine, without Docker: a real Temporal server (built from its Go
// module, all services in one process on loopback) on Debian's PostgreSQL, schemas from Temporal's
// own SQL tool, the namespace and the project's search attributes. Its frontend is on mutual TLS
// (certificates made with openssl at `up`); traffic between its services stays plain.
//
//   npx tsx scripts/temporal-cluster.ts up        build the binaries if missing, then start it all
//   npx tsx scripts/temporal-cluster.ts down      stop it all and delete its data
//   npx tsx scripts/temporal-cluster.ts restart   restart the Temporal server only (data kept)
//   npx tsx scripts/temporal-cluster.ts status    what runs, and where
//   npx tsx scripts/temporal-cluster.ts build     build the binaries only
//   npx tsx scripts/temporal-cluster.ts test [vitest args]   up, the cluster test suite, down
//
// Binaries live in .tools/temporal-server-<version>/ (git-ignored), state in .data/temporal-cluster/
// (certificates in its tls/), logs in .data/temporal-cluster-logs/ (kept after `down`). Ports:
// CLUSTER_PORTS below.
import { spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import { msToTs } from '@temporalio/common/lib/time.js';
import { projectRoot } from '../src/temporal/cli-binary.js';
import {
  connectTemporalClient,
  type TemporalConnectionOptions,
} from '../src/temporal/connection.js';
import {
  PCDS_SEARCH_ATTRIBUTES,
  registerSearchAttributes,
} from '../src/temporal/search-attributes.js';
import { run, startPostgres, stopPostgres } from './postgres.js';
import { makeTestCertificates, testCertificatePaths } from './tls-certs.js';
import {
  BIN_DIR,
  SERVER_BIN,
  SQL_TOOL_BIN,
  TEMPORAL_SERVER_VERSION,
  buildBinaries,
} from './temporal-server-build.mjs';

export { TEMPORAL_SERVER_VERSION };
export { postgresBinDir } from './postgres.js';

const root = projectRoot();
/** The server configuration docker-compose.yml mounts too. */
export const CONFIG_FILE = join(root, 'deploy', 'temporal', 'config.yaml');
const DYNAMIC_CONFIG_FILE = join(root, 'deploy', 'temporal', 'dynamicconfig.yaml');
/** Everything a running cluster writes; `down` deletes it. */
export const STATE_DIR = join(root, '.data', 'temporal-cluster');
const PG_DATA = join(STATE_DIR, 'pg');
const PG_SOCKET_DIR = join(STATE_DIR, 'pg-socket');
/** Logs outlive `down` (to read after a failed run); the next `up` replaces them. */
export const LOG_DIR = join(root, '.data', 'temporal-cluster-logs');
const PG_LOG = join(LOG_DIR, 'postgresql.log');
export const SERVER_LOG = join(LOG_DIR, 'temporal-server.log');
const SERVER_PID = join(STATE_DIR, 'temporal-server.pid');
/** The frontend's certificates (a CA, the server's, a client's, and another CA's client). */
export const CLUSTER_TLS = testCertificatePaths(join(STATE_DIR, 'tls'));

/**
 * Fixed ports on loopback, below Linux's ephemeral range (32768-60999) where the dev servers of
 * the other tests take theirs, and away from the dev server's usual 7233/8233.
 */
export const CLUSTER_PORTS = {
  postgres: 17432,
  frontendGrpc: 17233,
  frontendHttp: 17243,
  history: 17234,
  matching: 17235,
  worker: 17239,
  frontendMembership: 17933,
  historyMembership: 17934,
  matchingMembership: 17935,
  workerMembership: 17939,
  metrics: 17000,
} as const;

export const CLUSTER_ADDRESS = `127.0.0.1:${CLUSTER_PORTS.frontendGrpc}`;
export const CLUSTER_NAMESPACE = 'default';
/** The development role of deploy/temporal/config.yaml (and docker-compose.yml). */
const DB_USER = 'temporal';
const DB_PASSWORD = 'temporal';

const STOP_GRACE_MS = 10_000;

/**
 * The settings a client or worker of the cluster needs: the client certificate, the CA of the
 * server's, and a name of the server's certificate other than the address (to exercise it).
 */
export function clusterTlsEnv(): Record<string, string> {
  return {
    PCDS_TEMPORAL_TLS_CERT: CLUSTER_TLS.clientCert,
    PCDS_TEMPORAL_TLS_KEY: CLUSTER_TLS.clientKey,
    PCDS_TEMPORAL_TLS_CA: CLUSTER_TLS.ca,
    PCDS_TEMPORAL_TLS_SERVER_NAME: CLUSTER_TLS.serverName,
  };
}

/** The script's own connections: the cluster's client certificate, as any client's. */
function clusterConnection(extra: Partial<TemporalConnectionOptions> = {}): Promise<Connection> {
  return connectTemporalClient({
    address: CLUSTER_ADDRESS,
    tls: {
      cert: CLUSTER_TLS.clientCert,
      key: CLUSTER_TLS.clientKey,
      ca: CLUSTER_TLS.ca,
      serverName: CLUSTER_TLS.serverName,
    },
    ...extra,
  });
}

function log(line: string): void {
  process.stderr.write(`[cluster] ${line}\n`);
}

function seconds(since: number): string {
  return ((Date.now() - since) / 1000).toFixed(1);
}

// ---- PostgreSQL ------------------------------------------------------------------------------

function startClusterPostgres(): void {
  const started = Date.now();
  startPostgres({
    dataDir: PG_DATA,
    socketDir: PG_SOCKET_DIR,
    port: CLUSTER_PORTS.postgres,
    logFile: PG_LOG,
    user: DB_USER,
    password: DB_PASSWORD,
    within: root,
    settings: { max_connections: 200 },
  });
  log(`PostgreSQL on 127.0.0.1:${CLUSTER_PORTS.postgres} in ${seconds(started)} s`);
}

/** Both databases, their schemas at the newest version, with Temporal's own SQL tool. */
function setupSchemas(): void {
  const started = Date.now();
  // The tool reads its connection from SQL_* variables (the password stays off the command line).
  const env = {
    ...process.env,
    SQL_PLUGIN: 'postgres12',
    SQL_HOST: '127.0.0.1',
    SQL_PORT: String(CLUSTER_PORTS.postgres),
    SQL_USER: DB_USER,
    SQL_PASSWORD: DB_PASSWORD,
  };
  for (const [db, schema] of [
    ['temporal', 'postgresql/v12/temporal'],
    ['temporal_visibility', 'postgresql/v12/visibility'],
  ]) {
    run(SQL_TOOL_BIN, ['--db', db, 'create-database'], { env });
    run(SQL_TOOL_BIN, ['--db', db, 'setup-schema', '-v', '0.0'], { env });
    run(SQL_TOOL_BIN, ['--db', db, 'update-schema', '-s', schema], { env });
  }
  // The project's store (batch rows and results) in a database of its own; its tables are made
  // by the project's migrations when a process first opens it.
  run(SQL_TOOL_BIN, ['--db', STORE_DB, 'create-database'], { env });
  log(`schemas (temporal, temporal_visibility) and database ${STORE_DB} in ${seconds(started)} s`);
}

/** The project's store on the cluster's PostgreSQL: what PCDS_STORE_URL is set to for the suites. */
export const STORE_DB = 'pcds_store';
export const CLUSTER_STORE_URL = `postgres://${DB_USER}:${DB_PASSWORD}@127.0.0.1:${CLUSTER_PORTS.postgres}/${STORE_DB}`;

// ---- Temporal server -------------------------------------------------------------------------

/** The variables deploy/temporal/config.yaml reads, set to this topology's loopback ports. */
function serverEnv(): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    BIND_ON_IP: '127.0.0.1',
    POSTGRES_SEEDS: '127.0.0.1',
    DB_PORT: String(CLUSTER_PORTS.postgres),
    POSTGRES_USER: DB_USER,
    POSTGRES_PWD: DB_PASSWORD,
    FRONTEND_GRPC_PORT: String(CLUSTER_PORTS.frontendGrpc),
    FRONTEND_HTTP_PORT: String(CLUSTER_PORTS.frontendHttp),
    HISTORY_GRPC_PORT: String(CLUSTER_PORTS.history),
    MATCHING_GRPC_PORT: String(CLUSTER_PORTS.matching),
    WORKER_GRPC_PORT: String(CLUSTER_PORTS.worker),
    FRONTEND_MEMBERSHIP_PORT: String(CLUSTER_PORTS.frontendMembership),
    HISTORY_MEMBERSHIP_PORT: String(CLUSTER_PORTS.historyMembership),
    MATCHING_MEMBERSHIP_PORT: String(CLUSTER_PORTS.matchingMembership),
    WORKER_MEMBERSHIP_PORT: String(CLUSTER_PORTS.workerMembership),
    PROMETHEUS_PORT: String(CLUSTER_PORTS.metrics),
    DYNAMIC_CONFIG_FILE_PATH: DYNAMIC_CONFIG_FILE,
    LOG_LEVEL: process.env.PCDS_CLUSTER_LOG_LEVEL ?? 'warn',
    // The frontend on mutual TLS; the server's own system worker presents the client certificate.
    TEMPORAL_TLS_FRONTEND_CERT: CLUSTER_TLS.serverCert,
    TEMPORAL_TLS_FRONTEND_KEY: CLUSTER_TLS.serverKey,
    TEMPORAL_TLS_CLIENT_CA_CERT: CLUSTER_TLS.ca,
    TEMPORAL_TLS_SERVER_CA_CERT: CLUSTER_TLS.ca,
    TEMPORAL_TLS_FRONTEND_SERVER_NAME: CLUSTER_TLS.serverName,
    TEMPORAL_TLS_SYSTEM_WORKER_CERT: CLUSTER_TLS.clientCert,
    TEMPORAL_TLS_SYSTEM_WORKER_KEY: CLUSTER_TLS.clientKey,
  };
}

/** The server's pid from its pid file, if that process still runs our binary (pids are reused). */
function serverPid(): number | undefined {
  if (!existsSync(SERVER_PID)) return undefined;
  const pid = Number(readFileSync(SERVER_PID, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(SERVER_BIN) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Running, and not a zombie waiting for a parent (PID 1 here may be slow to reap). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) S ...", the state right after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Starts the server detached (it outlives this command) and waits until the frontend answers. */
async function startServer(): Promise<void> {
  const started = Date.now();
  const fd = openSync(SERVER_LOG, 'a');
  writeSync(
    fd,
    `\n=== ${new Date().toISOString()} temporal-server ${TEMPORAL_SERVER_VERSION} start\n`,
  );
  let pid: number | undefined;
  try {
    const child = spawn(SERVER_BIN, ['--config-file', CONFIG_FILE, '--allow-no-auth', 'start'], {
      cwd: root,
      env: serverEnv(),
      stdio: ['ignore', fd, fd],
      detached: true,
    });
    pid = child.pid;
    child.unref();
  } finally {
    closeSync(fd);
  }
  if (pid === undefined) throw new Error(`temporal-server did not start; see ${SERVER_LOG}`);
  writeFileSync(SERVER_PID, `${pid}\n`);
  const deadline = Date.now() + 60_000;
  let lastError = '';
  while (Date.now() < deadline) {
    if (!alive(pid)) {
      throw new Error(
        `temporal-server exited while starting. Last lines of ${SERVER_LOG}:\n${tail(SERVER_LOG, 20)}`,
      );
    }
    let connection: Connection | undefined;
    try {
      connection = await clusterConnection({ connectTimeoutMs: 1_000, explain: false });
      await connection.workflowService.getSystemInfo({});
      log(
        `temporal-server ${TEMPORAL_SERVER_VERSION} (pid ${pid}) on ${CLUSTER_ADDRESS} in ${seconds(started)} s`,
      );
      return;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    } finally {
      await connection?.close();
    }
    await sleep(100);
  }
  throw new Error(
    `temporal-server did not answer on ${CLUSTER_ADDRESS} within 60 s (${lastError}); see ${SERVER_LOG}`,
  );
}

/** SIGTERM, then SIGKILL after STOP_GRACE_MS; resolves once the process is gone. */
async function stopServer(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const pid = serverPid();
  if (pid === undefined) return;
  const started = Date.now();
  process.kill(pid, signal);
  const deadline = Date.now() + STOP_GRACE_MS;
  while (alive(pid)) {
    if (Date.now() > deadline) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await sleep(50);
  }
  rmSync(SERVER_PID, { force: true });
  log(`temporal-server (pid ${pid}) stopped by ${signal} in ${seconds(started)} s`);
}

function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * The namespace and the project's search attributes (PCDS_SEARCH_ATTRIBUTES, registered by the
 * same registerSearchAttributes a worker runs). Waits until the frontend accepts a query that
 * names every attribute: the server's namespace cache picks up new aliases within seconds.
 */
async function setupNamespace(namespace: string): Promise<void> {
  const started = Date.now();
  const connection = await clusterConnection();
  try {
    try {
      await connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs('1 day'),
      });
    } catch (err) {
      if (!/already exists/i.test(err instanceof Error ? err.message : String(err))) throw err;
    }
    await until(`namespace ${namespace}`, () =>
      connection.workflowService.describeNamespace({ namespace }),
    );
    const { added } = await registerSearchAttributes(connection, namespace);
    const query = PCDS_SEARCH_ATTRIBUTES.map(
      (key) => `${key.name} = ${SAMPLE_VALUE[key.type]}`,
    ).join(' OR ');
    await until('the search attributes', () =>
      connection.workflowService.countWorkflowExecutions({ namespace, query }),
    );
    log(
      `namespace ${namespace}, search attributes ${added.length > 0 ? added.join(', ') : '(all present)'} ` +
        `in ${seconds(started)} s`,
    );
  } finally {
    await connection.close();
  }
}

/** A value of each type, for a query that names an attribute (the server checks name and type). */
const SAMPLE_VALUE: Record<SearchAttributeType, string> = {
  TEXT: "''",
  KEYWORD: "''",
  KEYWORD_LIST: "''",
  INT: '0',
  DOUBLE: '0',
  BOOL: 'false',
  DATETIME: "'2000-01-01T00:00:00Z'",
};

async function until(
  what: string,
  attempt: () => Promise<unknown>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await attempt();
      return;
    } catch (err) {
      if (Date.now() > deadline) {
        throw new Error(
          `${what} not ready within ${timeoutMs} ms: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      await sleep(200);
    }
  }
}

/** A port someone else already listens on would make the server fail late and obscurely. */
async function assertPortsFree(): Promise<void> {
  const taken: string[] = [];
  for (const [name, port] of Object.entries(CLUSTER_PORTS)) {
    const inUse = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port });
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (inUse) taken.push(`${name} ${port}`);
  }
  if (taken.length > 0) {
    throw new Error(
      `ports in use on 127.0.0.1: ${taken.join(', ')}. A cluster left running? ` +
        '`npx tsx scripts/temporal-cluster.ts down`, or stop whatever listens there.',
    );
  }
}

// ---- the cluster -----------------------------------------------------------------------------

export interface ClusterInfo {
  address: string;
  namespace: string;
  /** PCDS_TEMPORAL_TLS_* for its clients and workers. */
  tlsEnv: Record<string, string>;
}

/** Up from nothing: PostgreSQL, schemas, server, namespace, search attributes. */
export async function up(namespace = CLUSTER_NAMESPACE): Promise<ClusterInfo> {
  await buildBinaries();
  const started = Date.now();
  if (serverPid() !== undefined || existsSync(join(PG_DATA, 'postmaster.pid'))) {
    throw new Error(`a cluster is already up (${STATE_DIR}); bring it down first`);
  }
  // Leftovers of a cluster that was not brought down (a killed run): start clean.
  rmSync(STATE_DIR, { recursive: true, force: true });
  await assertPortsFree();
  mkdirSync(STATE_DIR, { recursive: true });
  makeTestCertificates(CLUSTER_TLS.dir);
  rmSync(LOG_DIR, { recursive: true, force: true });
  try {
    startClusterPostgres();
    setupSchemas();
    await startServer();
    await setupNamespace(namespace);
  } catch (err) {
    log(`up failed: bringing down what started`);
    await down().catch((downErr: unknown) => log(`down after a failed up: ${String(downErr)}`));
    throw err;
  }
  log(`up in ${seconds(started)} s: ${CLUSTER_ADDRESS} (mutual TLS), namespace ${namespace}`);
  log(
    `connect with: ${Object.entries(clusterTlsEnv())
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
  return { address: CLUSTER_ADDRESS, namespace, tlsEnv: clusterTlsEnv() };
}

/** Stops the server and PostgreSQL, then deletes the cluster's data. Safe when nothing runs. */
export async function down(): Promise<void> {
  const started = Date.now();
  await stopServer();
  stopPostgres(PG_DATA);
  rmSync(STATE_DIR, { recursive: true, force: true });
  log(`down in ${seconds(started)} s`);
}

/**
 * Restarts the Temporal server on the same database, as an operator's restart or a crash would
 * (`SIGKILL` for the latter). Clients and workers see it unavailable meanwhile.
 */
export async function restartServer(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (serverPid() === undefined) throw new Error('no cluster server is running');
  await stopServer(signal);
  await startServer();
}

function status(): void {
  const pid = serverPid();
  const pg = existsSync(join(PG_DATA, 'postmaster.pid'));
  process.stdout.write(
    `temporal-server ${TEMPORAL_SERVER_VERSION}: ${pid ? `running (pid ${pid}) on ${CLUSTER_ADDRESS}, mutual TLS (certificates in ${CLUSTER_TLS.dir})` : 'not running'}\n` +
      `PostgreSQL: ${pg ? `running on 127.0.0.1:${CLUSTER_PORTS.postgres}` : 'not running'}\n` +
      `binaries: ${existsSync(SERVER_BIN) ? BIN_DIR : 'not built yet'}\n` +
      `logs (kept after down): ${SERVER_LOG}, ${PG_LOG}\n`,
  );
}

/**
 * The cluster test run: up, the suite in vitest.cluster.config.ts against it (extra arguments go
 * to vitest), down, also when the suite fails or the run is interrupted. Returns vitest's code.
 */
async function testRun(vitestArgs: string[]): Promise<number> {
  await buildBinaries(); // outside the timed part: a cold build takes minutes
  const started = Date.now();
  const info = await up();
  let child: ReturnType<typeof spawn> | undefined;
  const interrupt = (signal: NodeJS.Signals) => child?.kill(signal);
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);
  try {
    child = spawn(
      process.execPath,
      [
        join(root, 'node_modules', 'vitest', 'vitest.mjs'),
        'run',
        '--config',
        'vitest.cluster.config.ts',
        ...vitestArgs,
      ],
      {
        cwd: root,
        stdio: 'inherit',
        env: {
          ...process.env,
          PCDS_TEST_TEMPORAL_ADDRESS: info.address,
          PCDS_TEST_TEMPORAL_NAMESPACE: info.namespace,
          PCDS_TEST_CLUSTER: '1',
          // Every client and worker of the suites, spawned `pcds` processes too, goes through TLS.
          ...info.tlsEnv,
          // Batches keep their rows and results in PostgreSQL, as in production.
          PCDS_STORE_URL: CLUSTER_STORE_URL,
        },
      },
    );
    const running = child;
    const code = await new Promise<number>((resolve) => {
      running.once('error', (err) => (log(`vitest: ${err.message}`), resolve(1)));
      running.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    });
    if (code !== 0) log(`tests failed; the cluster's logs stay in ${LOG_DIR}`);
    return code;
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    await down();
    log(`cluster test run (up, tests, down) took ${seconds(started)} s`);
  }
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'build':
      await buildBinaries();
      break;
    case 'up':
      await up();
      break;
    case 'down':
      await down();
      break;
    case 'restart':
      await restartServer(rest[0] === '--kill' ? 'SIGKILL' : 'SIGTERM');
      break;
    case 'status':
      status();
      break;
    case 'test':
      process.exitCode = await testRun(rest);
      break;
    default:
      throw new Error(
        'usage: temporal-cluster.ts <build|up|down|restart [--kill]|status|test [vitest args]>',
      );
  }
}

// Run as a command, not when a test imports restartServer.
if (process.argv[1] !== undefined && /temporal-cluster\.ts$/.test(process.argv[1])) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    log(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  });
}
