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

  /** One instrument of any kind: each of add, record and set keeps the value. */
  private instrument<T>(
    kind: Record['kind'],
    name: string,
    valueType: NumericMetricValueType,
    unit?: string,
    description?: string,
  ): T {
    const keep = (value: number, tags: MetricTags = {}) =>
      void this.records.push({ name, kind, value, tags });
    const instrument = {
      name,
      kind,
      valueType,
      unit,
      description,
      add: keep,
      record: keep,
      set: keep,
    };
    return { ...instrument, withTags: () => instrument } as T;
  }

  createCounter(name: string, unit?: string, description?: string): MetricCounter {
    return this.instrument('counter', name, 'int', unit, description);
  }

  createHistogram(
    name: string,
    valueType: NumericMetricValueType = 'int',
    unit?: string,
    description?: string,
  ): MetricHistogram {
    return this.instrument('histogram', name, valueType, unit, description);
  }

  createGauge(
    name: string,
    valueType: NumericMetricValueType = 'int',
    unit?: string,
    description?: string,
  ): MetricGauge {
    return this.instrument('gauge', name, valueType, unit, description);
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
