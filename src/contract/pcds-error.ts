// The one error base of the project: every error it throws on purpose carries a code of the
// taxonomy (contract/errors.ts). Messages name fields and rules, never a parameter's value.
import type { PcdsErrorCode } from './errors.js';

export class PcdsError extends Error {
  override name = 'PcdsError';
  constructor(
    readonly code: PcdsErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
