// Builds the Temporal server the cluster runs (scripts/temporal-cluster.ts) from its Go module, once,
// into .tools/temporal-server-<version>/ (git-ignored): `temporal-server` and `temporal-sql-tool`.
// Plain JavaScript on Node's built-ins alone, so it runs before `npm install` has installed
// anything: .ci/run starts it first, at the lowest priority, and the cold build (minutes of
// compiling) takes the CPU the install, the demo, the static checks and the tests leave idle.
//
//   node scripts/temporal-server-build.mjs     build if missing (`temporal-cluster.ts build` too)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The server release under test; docker-compose.yml runs the same one. */
export const TEMPORAL_SERVER_VERSION = '1.32.1';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Cached binaries (git-ignored): `temporal-server` and `temporal-sql-tool`. */
export const BIN_DIR = join(root, '.tools', `temporal-server-${TEMPORAL_SERVER_VERSION}`);
export const SERVER_BIN = join(BIN_DIR, 'temporal-server');
export const SQL_TOOL_BIN = join(BIN_DIR, 'temporal-sql-tool');

/** @param {string} line */
function log(line) {
  process.stderr.write(`[cluster] ${line}\n`);
}

/**
 * Builds the server and its SQL tool once into BIN_DIR. Go's build and module caches live in a
 * temporary folder removed afterwards (about 3.9 GB); the cold build takes 5-9 minutes.
 * @returns {Promise<void>}
 */
export async function buildBinaries() {
  if (existsSync(SERVER_BIN) && existsSync(SQL_TOOL_BIN)) return;
  const goVersion = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (goVersion.status !== 0) {
    throw new Error(
      'Go is needed once to build the Temporal server (https://go.dev/dl/); ' +
        `\`go version\` failed: ${goVersion.error?.message ?? goVersion.stderr}`,
    );
  }
  const work = mkdtempSync(join(tmpdir(), 'pcds-temporal-build-'));
  const partial = join(work, 'bin');
  const started = Date.now();
  log(
    `building temporal-server ${TEMPORAL_SERVER_VERSION} with ${goVersion.stdout.trim()} ` +
      `(first time only: 5-9 min, ~2.6 GB RAM; Go caches in ${work}, removed afterwards)`,
  );
  try {
    const env = {
      ...process.env,
      GOBIN: partial,
      GOCACHE: join(work, 'cache'),
      GOMODCACHE: join(work, 'mod'),
      GOPATH: join(work, 'gopath'),
      GOTMPDIR: work,
      GOFLAGS: '-mod=mod',
      // As Temporal's release binaries: pure Go, so no C compiler runs for the standard library's
      // cgo packages (net, os/user, runtime/cgo); the SQL plugins are pure Go.
      CGO_ENABLED: '0',
      // The installed Go only: v1.32.1 is the newest release it builds (later ones want a newer Go).
      GOTOOLCHAIN: 'local',
    };
    await runAsync(
      'go',
      [
        'install',
        '-trimpath',
        '-ldflags=-s -w',
        `go.temporal.io/server/cmd/server@v${TEMPORAL_SERVER_VERSION}`,
        `go.temporal.io/server/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`,
      ],
      env,
    );
    mkdirSync(BIN_DIR, { recursive: true });
    // The SQL tool first: the server's presence marks the cache complete.
    await rename(join(partial, 'sql'), SQL_TOOL_BIN);
    await rename(join(partial, 'server'), SERVER_BIN);
    log(`built in ${((Date.now() - started) / 1000).toFixed(1)} s: ${BIN_DIR}`);
  } finally {
    // The module cache is read-only on purpose; make it writable so it can go.
    spawnSync('chmod', ['-R', 'u+w', work]);
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * @param {string} cmd
 * @param {string[]} args
 * @param {NodeJS.ProcessEnv} env
 * @returns {Promise<void>}
 */
function runAsync(cmd, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'inherit', 'inherit'] });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0
        ? resolve()
        : reject(new Error(`${cmd} ${args.join(' ')} failed (${signal ?? `exit ${code}`})`)),
    );
  });
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildBinaries().catch((err) => {
    log(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  });
}
