// Counts of the rows that list some of their parameters (values trimmed, values unreadable), by
// parameter: what a batch's plan says of how its input was read. Kept while rows are read (the
// plan's pass, or the store's load), never per row.
import { getEndpoint } from '../contract/index.js';
import { endpointParameters } from './columns.js';
import type { FieldCounts } from './plan.js';
import { isInvalidRow, type InputRow } from './types.js';

/** A parameter of the endpoint is named; any other key (a loosely documented endpoint's) is "other". */
export class FieldCounter {
  readonly counts: FieldCounts = { rows: 0, fields: {} };
  constructor(private readonly names: ReadonlySet<string>) {}
  add(fields: readonly string[] | undefined): void {
    if (!fields?.length) return;
    this.counts.rows += 1;
    for (const field of fields) {
      const name = this.names.has(field) ? field : 'other';
      this.counts.fields[name] = (this.counts.fields[name] ?? 0) + 1;
    }
  }
}

/** The valid rows' trimmed and unreadable values of an endpoint's input, counted as they pass. */
export class ValueNotes {
  readonly trimmed: FieldCounter;
  readonly unreadable: FieldCounter;
  constructor(endpoint: string) {
    const names = new Set(endpointParameters(getEndpoint(endpoint)).names);
    this.trimmed = new FieldCounter(names);
    this.unreadable = new FieldCounter(names);
  }
  note(row: InputRow): void {
    if (isInvalidRow(row)) return;
    this.trimmed.add(row.trimmed);
    this.unreadable.add(row.unreadable);
  }
}
