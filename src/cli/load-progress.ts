// The progress of a load into the store, as one line the CLI redraws: how much of the input
// file was read and how many rows went in. Counts and sizes only: nothing of the file's content.
import { SingleBar } from 'cli-progress';
import type { LoadProgress } from '../store/load.js';

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** A bar over the file's bytes; hand `onProgress` to loadFileIntoStore and `stop` it after. */
export function loadProgressBar(out: NodeJS.WritableStream = process.stderr): {
  onProgress: (p: LoadProgress) => void;
  stop: () => void;
} {
  const bar = new SingleBar({
    stream: out,
    format: 'loading {bar} {percentage}% of {size} | {rows} rows',
    hideCursor: true,
    barsize: 30,
    noTTYOutput: true,
    notTTYSchedule: 5000,
  });
  let started = false;
  return {
    onProgress(p) {
      const payload = { size: megabytes(p.totalBytes), rows: p.rows };
      if (!started) {
        bar.start(Math.max(p.totalBytes, 1), p.bytes, payload);
        started = true;
      } else bar.update(p.bytes, payload);
    },
    stop() {
      if (started) bar.stop();
      started = false;
    },
  };
}
