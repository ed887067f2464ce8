// What a command that waits for work says while it waits: every few seconds it asks why (the
// client's wait reasons) and prints a `waiting:` line when the reason changes, again every half
// minute while it lasts, and a word when the work goes on. A wait is never silent.
import { setTimeout as sleep } from 'node:timers/promises';
import type { WaitReason } from '../client/wait-reasons.js';

export interface WaitReportOptions {
  /** How often to ask (ms). */
  everyMs?: number;
  /** A reason still in force is said again this often (ms). */
  repeatMs?: number;
  /** With no reason to hold it, what the work is doing, said once it took this long (ms). */
  quietMs?: number;
  write?: (line: string) => void;
  now?: () => number;
}

export interface WaitSnapshot {
  reasons: WaitReason[];
  /** What the work does while nothing holds it back (`the service is working on its job`). */
  doing?: string;
}

const keyOf = (reasons: readonly WaitReason[]) =>
  reasons.map((r) => `${r.kind}:${r.keyId ?? ''}`).join('|');

/**
 * Awaits `work`, reporting why it waits (`ask`) on the side. The reports never fail the wait: a
 * reason that cannot be read is left unsaid until it can.
 */
export async function reportWaits<T>(
  work: Promise<T>,
  ask: () => Promise<WaitSnapshot>,
  opts: WaitReportOptions = {},
): Promise<T> {
  const every = opts.everyMs ?? 2_000;
  const repeat = opts.repeatMs ?? 30_000;
  const quiet = opts.quietMs ?? 5_000;
  const write = opts.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const now = opts.now ?? Date.now;
  const began = now();
  let settled = false;
  const done = work.finally(() => {
    settled = true;
  });
  const watching = (async () => {
    let said = '';
    let saidAt = 0;
    let doingSaid = false;
    while (!settled) {
      await Promise.race([sleep(every), done.catch(() => undefined)]);
      if (settled) return;
      const snap = await ask().catch(() => undefined);
      if (settled || !snap) continue;
      const key = keyOf(snap.reasons);
      if (snap.reasons.length > 0) {
        if (key !== said || now() - saidAt >= repeat) {
          const again =
            key === said
              ? `still waiting (${Math.round((now() - began) / 1000)} s): `
              : 'waiting: ';
          for (const r of snap.reasons) write(`${again}${r.message}`);
          said = key;
          saidAt = now();
        }
      } else if (said) {
        write('going on: nothing holds it back now');
        said = '';
        doingSaid = false;
      } else if (snap.doing && !doingSaid && now() - began >= quiet) {
        write(`waiting: ${snap.doing}`);
        doingSaid = true;
      }
    }
  })();
  try {
    return await done;
  } finally {
    await watching.catch(() => undefined);
  }
}

/** What a call does while nothing holds it back, from its PcdsState. */
export function callDoing(state: string | undefined): string | undefined {
  switch (state) {
    case 'submitting':
      return 'the call is submitting its job to the service';
    case 'polling':
      return "the service is working on the call's job (polled until it ends)";
    case 'waiting_for_webhook':
      return "the service is working on the call's job (its result comes by webhook)";
    case 'waiting_for_key':
      return 'the call waits for its key to be usable again (see `pcds throttle status`)';
    default:
      return undefined;
  }
}
