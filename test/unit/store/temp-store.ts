// A store of a test's own: embedded SQLite in a folder of its own, sealed with keys made for the
// run, and closed after each test of the file that opened it.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { createSealer, openStore, type Store } from '../../../src/store/index.js';

const opened: Store[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

export async function tempStore(dir = mkdtempSync(join(tmpdir(), 'pcds-store-'))): Promise<Store> {
  const store = await openStore({
    url: `sqlite:${join(dir, 'store.sqlite')}`,
    dataDir: dir,
    sealer: createSealer(
      { currentKeyId: 'k1', keys: new Map([['k1', new Uint8Array(randomBytes(32))]]) },
      { key: randomBytes(32) },
    ),
  });
  opened.push(store);
  return store;
}
