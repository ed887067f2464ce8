// Appends a stored batch's results to a JSONL file as they arrive, where the caller runs: one
// line per row, whatever order the rows finish in. The file has one writer (this process), so a
// plain append does; rows already in the file when it starts (a watch started again) are kept.
import { createReadStream } from 'node:fs';
import { appendFile, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../files/atomic-write.js';
import { makeOpenFilePrivate } from '../files/private-mode.js';
import type { ResultReader } from './roles.js';

/** Rows read per query. */
const PAGE = 2000;

/**
 * Follows one batch into one file. Each `step` appends the results written since the last one.
 * It remembers every row below `lowWater` as written (they all are) and the few above it
 * individually, so memory stays bounded by how far finished rows run ahead of the slowest.
 */
export class ResultFollower {
  private lowWater = 0;
  private readonly above = new Set<number>();
  private opened = false;

  constructor(
    private readonly store: ResultReader,
    private readonly batchId: string,
    readonly path: string,
  ) {}

  /** Reads the rows the file holds already (a watch started again keeps them, once each). */
  private async open(): Promise<void> {
    await makePrivateDir(dirname(this.path));
    const fh = await open(this.path, 'a', PRIVATE_FILE_MODE);
    try {
      await makeOpenFilePrivate(fh);
    } finally {
      await fh.close();
    }
    const lines = createInterface({ input: createReadStream(this.path), crlfDelay: Infinity });
    for await (const line of lines) {
      const row = /^\{"row":(\d+)[,}]/.exec(line)?.[1];
      if (row) this.note(Number(row));
    }
    this.opened = true;
  }

  private note(row: number): void {
    if (row <= this.lowWater) return;
    this.above.add(row);
    while (this.above.delete(this.lowWater + 1)) this.lowWater += 1;
  }

  /** Appends what is new; returns how many lines it wrote. */
  async step(): Promise<number> {
    if (!this.opened) await this.open();
    let written = 0;
    let after = this.lowWater;
    for (;;) {
      const page = await this.store.results(this.batchId, { after, limit: PAGE });
      const fresh = page.lines.filter((l) => !this.above.has(l.row));
      if (fresh.length > 0) {
        await appendFile(
          this.path,
          fresh.map(({ keyId: _k, ...line }) => `${JSON.stringify(line)}\n`).join(''),
        );
        for (const l of fresh) this.note(l.row);
        written += fresh.length;
      }
      if (page.next === undefined) return written;
      after = page.next as number;
    }
  }
}
