// A MetricMeter that keeps what is recorded, so unit tests read the project's metrics without
// the SDK's runtime: counter sums, gauge values and histogram records by name and labels.
import type {
  MetricCounter,
  MetricGauge,
  MetricHistogram,
  MetricMeter,
  MetricTags,
  NumericMetricValueType,
} from '@temporalio/common';

export interface Record {
  name: string;
  kind: 'counter' | 'gauge' | 'histogram';
  value: number;
  tags: MetricTags;
}

export class RecordingMeter implements MetricMeter {
  readonly records: Record[] = [];

  createCounter(name: string, unit?: string, description?: string): MetricCounter {
    const counter: MetricCounter = {
      name,
      kind: 'counter',
      valueType: 'int',
      ...(unit ? { unit } : {}),
      ...(description ? { description } : {}),
      add: (value, tags = {}) => this.records.push({ name, kind: 'counter', value, tags }),
      withTags: () => counter,
    };
    return counter;
  }

  createHistogram(
    name: string,
    valueType: NumericMetricValueType = 'int',
    unit?: string,
    description?: string,
  ): MetricHistogram {
    const histogram: MetricHistogram = {
      name,
      kind: 'histogram',
      valueType,
      ...(unit ? { unit } : {}),
      ...(description ? { description } : {}),
      record: (value, tags = {}) => this.records.push({ name, kind: 'histogram', value, tags }),
      withTags: () => histogram,
    };
    return histogram;
  }

  createGauge(
    name: string,
    valueType: NumericMetricValueType = 'int',
    unit?: string,
    description?: string,
  ): MetricGauge {
    const gauge: MetricGauge = {
      name,
      kind: 'gauge',
      valueType,
      ...(unit ? { unit } : {}),
      ...(description ? { description } : {}),
      set: (value, tags = {}) => this.records.push({ name, kind: 'gauge', value, tags }),
      withTags: () => gauge,
    };
    return gauge;
  }

  withTags(): MetricMeter {
    return this;
  }

  /** The records of `name` whose tags include `tags`. */
  of(name: string, tags: MetricTags = {}): Record[] {
    return this.records.filter(
      (r) => r.name === name && Object.entries(tags).every(([k, v]) => r.tags[k] === v),
    );
  }

  /** The sum of a counter's adds with those tags. */
  sum(name: string, tags: MetricTags = {}): number {
    return this.of(name, tags).reduce((a, r) => a + r.value, 0);
  }
}
