// Seeded randomness: the dataset and the fault injector draw from these, so one seed always
// yields the same people, companies and fault sequence.
import { createHash } from 'node:crypto';

/** mulberry32: tiny, fast and good enough for synthetic data (not for secrets). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A 32-bit seed derived from any text, for per-record and per-input streams. */
export function seedOf(...parts: (string | number)[]): number {
  return createHash('sha256').update(parts.join('\u0000')).digest().readUInt32LE(0);
}

export function hexOf(bytes: number, ...parts: (string | number)[]): string {
  return createHash('sha256')
    .update(parts.join('\u0000'))
    .digest('hex')
    .slice(0, bytes * 2);
}

export class Rng {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = prng(seed);
  }
  float(): number {
    return this.next();
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.next() * list.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  /** k distinct items, order preserved by draw. */
  sample<T>(list: readonly T[], k: number): T[] {
    const pool = [...list];
    const out: T[] = [];
    while (out.length < k && pool.length)
      out.push(pool.splice(Math.floor(this.next() * pool.length), 1)[0]);
    return out;
  }
}
