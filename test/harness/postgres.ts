// A throwaway PostgreSQL cluster of a test's own (Debian's PostgreSQL, as the cluster script
// runs it): initdb in a temporary folder, started on a free loopback port, stopped and deleted at
// the end. Its files are there to read: a test can scan a table's own file, its WAL and a
// pg_dump for bytes that must be gone. As root, PostgreSQL's commands run as user postgres.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { postgresBinDir } from '../../scripts/temporal-cluster.js';
import { freeListenPort } from './ports.js';

export interface ThrowawayPostgres {
  /** postgres://pcds@127.0.0.1:<port>/pcds_store (trust authentication on loopback). */
  url: string;
  /** The cluster's data folder (its tables' files, pg_wal). */
  dataDir: string;
  /** The text of a plain pg_dump of the database. */
  dump(): string;
  /** The bytes of a table's own files (heap and its TOAST table), as they are on disk now. */
  tableFiles(table: string): Promise<string>;
  /** The bytes of the WAL segments. */
  walFiles(): string;
  stop(): void;
}

const isRoot = () => process.getuid?.() === 0;

function run(bin: string, args: string[]): string {
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  const r = spawnSync(cmd, argv, { encoding: 'utf8' });
  if (r.status !== 0)
    throw new Error(`${bin} ${args.join(' ')} failed: ${String(r.stdout)}${String(r.stderr)}`);
  return String(r.stdout);
}

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const bin = postgresBinDir();
  const base = mkdtempSync(join(tmpdir(), 'pcds-pg-'));
  if (isRoot()) {
    const id = (flag: string) =>
      Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
    chownSync(base, id('-u'), id('-g'));
  }
  chmodSync(base, 0o700);
  const dataDir = join(base, 'data');
  run(join(bin, 'initdb'), [
    '-D',
    dataDir,
    '-U',
    'pcds',
    '--auth=trust',
    '--encoding=UTF8',
    '--locale=C',
  ]);
  const port = await freeListenPort();
  const options = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${base}`,
    '-c fsync=off',
    '-c synchronous_commit=off',
  ].join(' ');
  run(join(bin, 'pg_ctl'), ['-D', dataDir, '-l', join(base, 'log'), '-o', options, '-w', 'start']);
  const admin = `postgres://pcds@127.0.0.1:${port}/postgres`;
  const url = `postgres://pcds@127.0.0.1:${port}/pcds_store`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query('CREATE DATABASE pcds_store');
  await client.end();
  const read = (path: string) => readFileSync(path).toString('latin1');
  return {
    url,
    dataDir,
    dump() {
      const r = spawnSync(join(bin, 'pg_dump'), ['--dbname', url], {
        encoding: 'latin1',
        maxBuffer: 256 * 1024 * 1024,
      });
      if (r.status !== 0) throw new Error(`pg_dump failed: ${String(r.stderr)}`);
      return String(r.stdout);
    },
    async tableFiles(table) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const got = await c.query<{ heap: string; toast: string | null }>(
          `SELECT pg_relation_filepath(c.oid) AS heap, pg_relation_filepath(c.reltoastrelid) AS toast
           FROM pg_class c WHERE c.relname = $1`,
          [table],
        );
        // What a checkpoint writes: the files as they are, not only in shared buffers.
        await c.query('CHECKPOINT');
        const { heap, toast } = got.rows[0];
        return [heap, toast]
          .filter((p): p is string => p !== null)
          .flatMap((p) => {
            const dir = join(dataDir, p, '..');
            const name = p.split('/').pop()!;
            // The main fork and its segments (name, name.1, ...).
            return readdirSync(dir)
              .filter((f) => f === name || f.startsWith(`${name}.`))
              .map((f) => read(join(dir, f)));
          })
          .join('\n');
      } finally {
        await c.end();
      }
    },
    walFiles() {
      const dir = join(dataDir, 'pg_wal');
      return readdirSync(dir)
        .filter((f) => /^[0-9A-F]{24}$/.test(f))
        .map((f) => read(join(dir, f)))
        .join('\n');
    },
    stop() {
      try {
        run(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(base, { recursive: true, force: true });
      }
    },
  };
}
