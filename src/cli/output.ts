// Shared CLI helpers: expected errors print `error: <message>` (no stack) and exit 1, bad usage 2.
import { PcdsError } from '../contract/pcds-error.js';
import { ConfigError } from '../config.js';

/** An error caused by how the command was called: exit code 2. */
export class UsageError extends PcdsError {
  override name = 'UsageError';
  constructor(message: string, options?: ErrorOptions) {
    super('invalid_usage', message, options);
  }
}

/** An expected runtime failure (service unreachable, ...): exit code 1, message only. */
export class CliError extends PcdsError {
  override name = 'CliError';
  constructor(message: string, options?: ErrorOptions) {
    super('command_failed', message, options);
  }
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/** A Node system error (ENOENT, EACCES, ...): a file or network problem the user can fix. */
const isSystemError = (err: Error) =>
  typeof (err as { syscall?: unknown }).syscall === 'string' &&
  typeof (err as { code?: unknown }).code === 'string';

/** Commander's argument errors, also when an action throws one. */
const isCommanderUsageError = (err: unknown) =>
  err instanceof Error && (err.name === 'InvalidArgumentError' || err.name === 'CommanderError');

/**
 * The command's own refusals and bad settings: their message says all there is (the code of their
 * class, invalid_usage or invalid_config, would add nothing); a subclass with a code of its own
 * (port_in_use, temporal_unreachable) shows it.
 */
const messageOnly = (err: Error) =>
  ['UsageError', 'CliError', 'ConfigError', 'EmulatorOptionsError', 'WebhookConfigError'].includes(
    err.name,
  ) &&
  ['invalid_usage', 'command_failed', 'invalid_config', 'invalid_options'].includes(
    (err as { code?: unknown }).code as string,
  );

/** Errors with a known shape are expected: print their message only. Anything else keeps its stack. */
export function reportError(err: unknown): number {
  if (isCommanderUsageError(err)) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return 2;
  }
  const known =
    (err instanceof Error && isSystemError(err)) ||
    err instanceof UsageError ||
    err instanceof ConfigError ||
    err instanceof CliError ||
    (err instanceof Error &&
      [
        'PcdsUsageError',
        'PcdsCallError',
        'NoWorkerError',
        'ServiceError',
        'TransportError',
        'UnknownKeyError',
        'EmulatorOptionsError',
        'WebhookConfigError',
      ].includes(err.name));
  if (err instanceof Error && known) {
    const code = messageOnly(err) ? undefined : (err as { code?: unknown }).code;
    process.stderr.write(
      `error: ${err.message}${typeof code === 'string' && !err.message.startsWith(code) ? ` (${code})` : ''}\n`,
    );
    return err instanceof UsageError || err.name === 'PcdsUsageError' ? 2 : 1;
  }
  process.stderr.write(
    `error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  return 1;
}

/** Wraps a command action so expected errors end the process cleanly. */
export function action<A extends unknown[]>(
  fn: (...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      process.exitCode = reportError(err);
    }
  };
}
