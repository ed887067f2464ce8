// Option parsers shared by the commands: a bad value is commander's one-line error naming it.
import { InvalidArgumentError } from 'commander';
import { parseAge } from '../calls/cache-policy.js';
import { timeScaleProblem } from '../contract/time-scale.js';
import { tenantIdProblem, weightProblem } from '../contract/tenant.js';

/** An integer option within [min, max]. */
export const intArg = (name: string, min: number, max: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}`);
  return n;
};

/** A number option within [min, max]. */
export const numArg = (name: string, min: number, max: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || n > max)
    throw new InvalidArgumentError(`${name} must be a number from ${min} to ${max}`);
  return n;
};

/** A time scale: times faster than the real service, 1 to MAX_TIME_SCALE (contract/time-scale.ts). */
export const timeScaleArg = (name: string) => (v: string) => {
  const n = Number(v);
  const problem = timeScaleProblem(n);
  if (problem) throw new InvalidArgumentError(`${name} ${problem}`);
  return n;
};

/** A TCP port to listen on (1-65535). */
export const portArg = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw new InvalidArgumentError('must be a port number');
  return n;
};

/** An age such as 7d, 12h, 30m or 90s, in milliseconds. */
export const ageArg = (name: string) => (v: string) => {
  try {
    return parseAge(v);
  } catch {
    throw new InvalidArgumentError(`${name} must be an age such as 7d, 12h, 30m or 90s`);
  }
};

/** A tenant id (the contract's rule: the message names the rule, never the value). */
export const tenantArg = (v: string) => {
  const problem = tenantIdProblem(v);
  if (problem) throw new InvalidArgumentError(problem);
  return v;
};

/** A batch's share weight (0.001-1000, as Temporal's fairness weights). */
export const weightArg = (v: string) => {
  const n = Number(v);
  const problem = weightProblem(n);
  if (problem) throw new InvalidArgumentError(problem);
  return n;
};

export const TENANT_HELP =
  "whose work it is (a tenant id; default PCDS_TENANT, else the operator's `default`): a tenant's ids, idempotency keys and cache entries are its own";

/** --csv-raw-cells of `pcds batch start` and `export`: what a CSV cell gets by default, and why. */
export const CSV_RAW_CELLS_HELP =
  'CSV cells exactly as they are, for programs that read the file (by default a cell starting ' +
  'with =, +, -, @ (or their full-width forms), tab, CR or LF, also behind blanks or invisible ' +
  "characters, gets a ' in front, and one after a ; or a line break inside the cell, so a " +
  'spreadsheet never runs it as a formula)';
