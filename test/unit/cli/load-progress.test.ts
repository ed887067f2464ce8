// The load's progress line: the share of the file read and the rows loaded, from the callback.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadProgressBar } from '../../../src/cli/load-progress.js';

describe('load progress line', () => {
  it('shows the share of the file read and the rows loaded', () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (d: Buffer) => (text += d.toString()));
    const bar = loadProgressBar(out);
    bar.onProgress({ rows: 1000, bytes: 1024 * 1024, totalBytes: 4 * 1024 * 1024 });
    bar.onProgress({ rows: 4000, bytes: 4 * 1024 * 1024, totalBytes: 4 * 1024 * 1024 });
    bar.stop();
    expect(text).toMatch(/loading .* 100% of 4\.0 MB \| 4000 rows/);
  });

  it('writes nothing when no progress came', () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (d: Buffer) => (text += d.toString()));
    loadProgressBar(out).stop();
    expect(text).toBe('');
  });
});
