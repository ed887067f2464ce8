// The Grafana dashboard under deploy/grafana queries only what the worker serves: every metric
// name in its queries is one of the catalogue's (the project's, or the SDK's that the worker's
// integration test finds served), grouped and filtered only by labels that metric has.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../../src/temporal/cli-binary.js';
import {
  METRIC_DEFS,
  SDK_METRICS,
  sampleNamesOf,
  type MetricDef,
} from '../../../src/metrics/catalogue.js';

interface Target {
  expr: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; type: string; query: unknown }[] };
}

const dashboard = JSON.parse(
  readFileSync(`${projectRoot()}/deploy/grafana/pcds-orchestrator.json`, 'utf8'),
) as Dashboard;

const served = new Map<string, MetricDef>();
for (const def of [...METRIC_DEFS, ...SDK_METRICS])
  for (const name of sampleNamesOf(def)) served.set(name, def);

const queries = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p, ...t })));
const NAME = /\b(?:pcds|temporal)_[a-z0-9_]+/g;
const metricsIn = (expr: string) => [...expr.matchAll(NAME)].map((m) => m[0]);

/** Label names an expression selects on (`{a="x"}`) or groups by (`by (a, b)`). */
function labelsIn(expr: string): string[] {
  const selectors = [...expr.matchAll(/\{([^}]*)\}/g)].flatMap((m) =>
    [...m[1].matchAll(/(\w+)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1]),
  );
  const grouped = [...expr.matchAll(/\bby\s*\(([^)]*)\)/g)].flatMap((m) =>
    m[1].split(',').map((l) => l.trim()),
  );
  return [...selectors, ...grouped].filter(Boolean);
}

describe('the Grafana dashboard', () => {
  it('has queries, each naming at least one metric', () => {
    expect(queries.length).toBeGreaterThan(10);
    for (const q of queries) expect(metricsIn(q.expr), q.panel.title).not.toEqual([]);
  });

  it('names only metrics the worker exports', () => {
    for (const q of queries)
      for (const name of metricsIn(q.expr))
        expect(served.has(name), `${q.panel.title}: ${name}`).toBe(true);
  });

  it('selects and groups by labels its metrics have', () => {
    for (const q of queries) {
      const defs = metricsIn(q.expr).map((n) => served.get(n)!);
      const allowed = new Set(
        defs.flatMap((d) => [...d.labels, ...(d.type === 'histogram' ? ['le'] : [])]),
      );
      for (const label of labelsIn(q.expr))
        expect(allowed, `${q.panel.title}: ${label}`).toContain(label);
    }
  });

  it('shows every metric of the project', () => {
    const shown = new Set(queries.flatMap((q) => metricsIn(q.expr)));
    for (const def of METRIC_DEFS)
      expect(
        sampleNamesOf(def).some((n) => shown.has(n)),
        def.name,
      ).toBe(true);
  });

  it('reads from a Prometheus datasource chosen by a variable', () => {
    const variable = dashboard.templating.list.find((v) => v.type === 'datasource');
    expect(variable).toMatchObject({ name: 'datasource', query: 'prometheus' });
    for (const p of dashboard.panels.filter((x) => x.type !== 'row')) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      for (const t of p.targets ?? []) expect(t.datasource).toEqual(p.datasource);
    }
  });
});
