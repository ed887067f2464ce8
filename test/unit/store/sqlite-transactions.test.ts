// Two processes on one embedded store: a transaction that reads and then writes, while another
// process writes in between. SQLite fails a deferred transaction's write at once ("database is
// locked": its snapshot is stale); the store begins its transactions immediate, so the other
// process waits for the lock instead, and both writes land.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { tempStore } from './temp-store.js';

const betterSqlite = createRequire(import.meta.url).resolve('better-sqlite3');

/** Another process that inserts `value` into t, waiting up to 10 s for the file's lock. */
function writerProcess(path: string, value: number) {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const D = require(${JSON.stringify(betterSqlite)});
       const db = new D(${JSON.stringify(path)});
       db.pragma('busy_timeout = 10000');
       db.prepare('insert into t (v) values (?)').run(${value});
       db.close();`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return {
    child,
    done: once(child, 'exit').then(([code]) => ({ code: code as number | null, stderr })),
  };
}

describe('the embedded store with another process writing', () => {
  it('a transaction that reads, then writes after the other process tried to write, commits', async () => {
    const store = await tempStore();
    if (store.location.engine !== 'sqlite') throw new Error('expected the embedded store');
    const path = store.location.shown.replace(/^sqlite:/, '');
    await sql`create table t (v integer not null)`.execute(store.db);
    let writer: ReturnType<typeof writerProcess> | undefined;
    await store.db.transaction().execute(async (tx) => {
      const before = await sql<{ n: number }>`select count(*) as n from t`.execute(tx);
      expect(before.rows[0]?.n).toBe(0);
      writer = writerProcess(path, 2);
      // Long enough for the other process to start and ask for the lock.
      await new Promise((r) => setTimeout(r, 1_500));
      await sql`insert into t (v) values (1)`.execute(tx);
    });
    const other = await writer!.done;
    expect(other).toEqual({ code: 0, stderr: '' });
    const after = await sql<{ v: number }>`select v from t order by v`.execute(store.db);
    expect(after.rows.map((r) => r.v)).toEqual([1, 2]);
  });
});
