// Shared helpers for the contract tests: validate by endpoint name and read the problems.
import { getEndpoint } from '../../../src/contract/catalogue.js';
import { validateInput, type InputProblem } from '../../../src/contract/validate.js';

export function problems(endpoint: string, input: unknown): InputProblem[] {
  const v = validateInput(getEndpoint(endpoint), input);
  return v.ok ? [] : v.problems;
}

export function accepts(endpoint: string, input: unknown): boolean {
  return validateInput(getEndpoint(endpoint), input).ok;
}

/** The fields that have a problem, for exact assertions. */
export const fieldsOf = (endpoint: string, input: unknown): string[] =>
  problems(endpoint, input).map((p) => p.field);
