// Reading a worker's /metrics over HTTP: the samples of the Prometheus text format, and sums of
// a metric's samples whose labels match.
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]] = l[2];
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

export class Scrape {
  constructor(
    readonly text: string,
    readonly samples: Sample[] = parseMetrics(text),
  ) {}

  static async of(url: string): Promise<Scrape> {
    const res = await fetch(url);
    if (res.status !== 200) throw new Error(`GET ${url}: HTTP ${res.status}`);
    return new Scrape(await res.text());
  }

  /** The sum of `name`'s samples whose labels include `labels` (0 when there is none). */
  sum(name: string, labels: Record<string, string> = {}): number {
    return this.samples
      .filter((s) => s.name === name)
      .filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
      .reduce((a, s) => a + s.value, 0);
  }

  has(name: string): boolean {
    return this.samples.some((s) => s.name === name);
  }

  names(): Set<string> {
    return new Set(this.samples.map((s) => s.name));
  }
}

/** How much each of `name`'s sums moved between two scrapes. */
export const moved = (
  before: Scrape,
  after: Scrape,
  name: string,
  labels: Record<string, string> = {},
) => after.sum(name, labels) - before.sum(name, labels);
