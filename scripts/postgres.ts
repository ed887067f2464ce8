// A throwaway PostgreSQL server from Debian's binaries, for the cluster script and the benchmarks:
// initdb into a folder, start on a loopback port with no fsync, stop. As root its commands run as
// the `postgres` user, since PostgreSQL refuses to run as root.
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';

/** Runs a command to its end; throws with its output when it fails. */
export function run(cmd: string, args: string[], opts: SpawnSyncOptions = {}): string {
  const result = spawnSync(cmd, args, { encoding: 'utf8', ...opts });
  if (result.error) throw new Error(`${cmd}: ${result.error.message}`);
  if (result.status !== 0) {
    throw new Error(
      `${cmd} ${args.join(' ')} failed (exit ${result.status ?? result.signal}):\n` +
        `${String(result.stdout)}${String(result.stderr)}`.trim(),
    );
  }
  return String(result.stdout);
}

/** Debian's PostgreSQL binaries (the newest installed), installing the package when absent. */
export function postgresBinDir(
  log: (line: string) => void = (line) => process.stderr.write(`[postgres] ${line}\n`),
): string {
  const find = () => {
    const base = '/usr/lib/postgresql';
    if (!existsSync(base)) return undefined;
    const versions = readdirSync(base)
      .filter((v) => existsSync(join(base, v, 'bin', 'pg_ctl')))
      .sort((a, b) => Number(b) - Number(a));
    return versions.length > 0 ? join(base, versions[0], 'bin') : undefined;
  };
  const found = find();
  if (found) return found;
  if (process.getuid?.() !== 0) {
    throw new Error(
      'PostgreSQL is not installed (no /usr/lib/postgresql/*/bin). Install it as root: ' +
        'apt-get update && apt-get install -y postgresql',
    );
  }
  log('PostgreSQL is missing: apt-get install -y postgresql');
  run('apt-get', ['update'], { stdio: 'inherit' });
  run('apt-get', ['install', '-y', 'postgresql'], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  const installed = find();
  if (!installed) throw new Error('apt-get installed postgresql, yet no pg_ctl was found');
  return installed;
}

function asPostgres(bin: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0
    ? ['runuser', ['-u', 'postgres', '--', bin, ...args]]
    : [bin, args];
}

/**
 * A folder PostgreSQL writes, handed to the `postgres` user when running as root. Its parents
 * below `within` get search permission for others (o+x: the `postgres` user may pass through them
 * to its own folder; it lists nothing, and the files beside it keep their modes).
 */
export function ownedByPostgres(dir: string, within: string): void {
  mkdirSync(dir, { recursive: true });
  if (process.getuid?.() !== 0) return;
  const uid = Number(run('id', ['-u', 'postgres']).trim());
  const gid = Number(run('id', ['-g', 'postgres']).trim());
  chownSync(dir, uid, gid);
  for (let up = dirname(dir); up.startsWith(`${within}/`); up = dirname(up)) {
    const mode = statSync(up).mode & 0o777;
    if ((mode & 0o001) === 0) chmodSync(up, mode | 0o001);
  }
}

export interface PostgresSpec {
  /** The data folder initdb creates (it must not exist yet or be empty). */
  dataDir: string;
  /** The Unix socket's folder (the server listens on loopback TCP too). */
  socketDir: string;
  port: number;
  logFile: string;
  /** The superuser initdb creates, with this password for TCP connections. */
  user: string;
  password: string;
  /** A folder the others are below: see ownedByPostgres. */
  within: string;
  /** More `-c name=value` settings. */
  settings?: Record<string, string | number>;
}

/** initdb, then starts the server and waits until it accepts connections. */
export function startPostgres(pg: PostgresSpec): void {
  const bin = postgresBinDir();
  ownedByPostgres(dirname(pg.dataDir), pg.within);
  ownedByPostgres(pg.socketDir, pg.within);
  ownedByPostgres(dirname(pg.logFile), pg.within);
  // initdb reads the superuser's password from a file it can open.
  const pwFile = join(dirname(pg.dataDir), `pg-password-${process.pid}`);
  writeFileSync(pwFile, `${pg.password}\n`, { mode: 0o644 });
  try {
    run(
      ...asPostgres(join(bin, 'initdb'), [
        '-D',
        pg.dataDir,
        '-U',
        pg.user,
        `--pwfile=${pwFile}`,
        '--auth-local=trust',
        '--auth-host=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
      ]),
    );
  } finally {
    rmSync(pwFile, { force: true });
  }
  // A throwaway database: no fsync. Loopback TCP only, the socket in our own folder.
  const options = [
    `-p ${pg.port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${pg.socketDir}`,
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    ...Object.entries(pg.settings ?? {}).map(([k, v]) => `-c ${k}=${v}`),
  ].join(' ');
  run(
    ...asPostgres(join(bin, 'pg_ctl'), [
      '-D',
      pg.dataDir,
      '-l',
      pg.logFile,
      '-o',
      options,
      '-w',
      'start',
    ]),
  );
}

/** Stops the server of `dataDir` (fast shutdown), if it runs. */
export function stopPostgres(dataDir: string): void {
  if (!existsSync(join(dataDir, 'postmaster.pid'))) return;
  run(...asPostgres(join(postgresBinDir(), 'pg_ctl'), ['-D', dataDir, '-m', 'fast', '-w', 'stop']));
}

/** Creates a database on a server started by startPostgres, over its socket. */
export function createDatabase(
  pg: Pick<PostgresSpec, 'socketDir' | 'port' | 'user'>,
  name: string,
) {
  run(
    ...asPostgres(join(postgresBinDir(), 'createdb'), [
      '-h',
      pg.socketDir,
      '-p',
      String(pg.port),
      '-U',
      pg.user,
      name,
    ]),
  );
}
