// One error vocabulary: PcdsErrorCode is the taxonomy's list, every code used in src/ is on it,
// and the project's errors share the PcdsError base with a typed code.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BatchSetupError } from '../../../src/client/batch-launch.js';
import { INVALID_ROW } from '../../../src/batch/types.js';
import { PcdsCallError, PcdsUsageError } from '../../../src/client-errors.js';
import {
  ERROR_CODES,
  ERRORS,
  isPcdsErrorCode,
  pcdsErrorCode,
  PcdsError,
  type PcdsErrorCode,
} from '../../../src/contract/index.js';
import { ServiceError, TransportError } from '../../../src/http/errors.js';
import { PermitRefusedError } from '../../../src/throttle/permits.js';
import { UnknownKeyError } from '../../../src/http/service-clients.js';
import { projectRoot } from '../../../src/temporal/cli-binary.js';
import { UnknownThrottleError } from '../../../src/client/throttle-operator.js';
import { CallbackUrlRefusedError } from '../../../src/webhooks/token.js';
import { ConfigError } from '../../../src/config-error.js';
import { WebhookConfigError } from '../../../src/webhooks/settings.js';
import { CliError, UsageError } from '../../../src/cli/output.js';
import { PortInUseError } from '../../../src/cli/ports.js';
import { NotFound } from '../../../src/mcp-server/answers.js';
import { TemporalCliError } from '../../../src/temporal/cli-binary.js';
import { TemporalConnectionError } from '../../../src/temporal/connection.js';
import { EmulatorOptionsError } from '../../../src/emulator/options.js';
import { KeySettingsError } from '../../../src/emulator/keys.js';
import { StoreSealError } from '../../../src/store/sealer.js';
import { StoreConfigError } from '../../../src/store/open.js';
import { BatchStoreError } from '../../../src/store/batch-store.js';
import { LoadError } from '../../../src/store/load.js';
import { ColumnError } from '../../../src/batch/columns.js';
import { EncodingError } from '../../../src/batch-io/text-encoding.js';
import { OutputUnwritableError } from '../../../src/batch-io/result-writer.js';
import { InputError } from '../../../src/batch-io/row-reader.js';

// Type level (checked by tsc): the union is the list's literals, not string.
const known: PcdsErrorCode = 'batch_not_found';
// @ts-expect-error a code that is not on the list is not a PcdsErrorCode
const unknown: PcdsErrorCode = 'no_such_code';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory()
      ? sourceFiles(join(dir, d.name))
      : d.name.endsWith('.ts')
        ? [join(dir, d.name)]
        : [],
  );
}

// `code: 'x'`, `code = 'x'` and the type of a created ApplicationFailure (comparisons are left
// out: zod's issue codes are compared too).
const CODE_LITERAL =
  /\bcode\s*[:=]\s*'([a-z]+(?:_[a-z]+)+)'|ApplicationFailure\.create\(\{\s*type:\s*'([a-z]+(?:_[a-z]+)+)'/g;

describe('PcdsErrorCode', () => {
  it("holds the interface's error table as written, with its HTTP statuses, and nothing else as the service's", () => {
    // The interface's "Errors" table, copied by hand: a code or a status changed in the taxonomy
    // (or a local code marked as the service's) fails here.
    const INTERFACE: Record<string, number> = {
      missing_credentials: 401,
      invalid_credentials: 401,
      api_key_expired: 401,
      missing_api_key: 401,
      invalid_api_key: 401,
      missing_api_secret: 401,
      invalid_api_secret: 401,
      api_key_disabled: 403,
      subscription_inactive: 403,
      subscription_required: 403,
      ip_not_allowed: 403,
      access_denied: 403,
      insufficient_credits: 402,
      request_not_found: 404,
      invalid_callback_url: 400,
      invalid_month: 400,
      invalid_year: 400,
      invalid_date: 400,
      rate_limit_exceeded: 429,
      search_error: 500,
      internal_error: 500,
      service_unavailable: 503,
    };
    const service = ERRORS.filter((e) => !e.local);
    expect(Object.fromEntries(service.map((e) => [e.code, e.http]))).toEqual(INTERFACE);
  });

  it('is the list of the taxonomy, once each', () => {
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    expect(ERROR_CODES.length).toBe(ERRORS.length);
    expect(isPcdsErrorCode(known)).toBe(true);
    expect(isPcdsErrorCode(unknown)).toBe(false);
  });

  it("holds the service's codes and the orchestrator's own", () => {
    for (const code of ['insufficient_credits', 'rate_limit_exceeded', 'search_error'])
      expect(ERROR_CODES).toContain(code);
    for (const code of [
      INVALID_ROW,
      'invalid_params',
      'invalid_options',
      'batch_not_found',
      'batch_exists',
      'poll_timeout',
      'submit_outcome_unknown',
      'unknown_key',
      'cancelled',
      'terminated',
    ])
      expect(ERROR_CODES).toContain(code);
  });

  it('every code written in src/ is on the list', () => {
    const found = new Set<string>();
    for (const file of sourceFiles(join(projectRoot(), 'src'))) {
      for (const m of readFileSync(file, 'utf8').matchAll(CODE_LITERAL)) found.add(m[1] ?? m[2]);
    }
    // The scan sees the codes of the workflows, activities and emulator, not a handful.
    expect(found.size).toBeGreaterThan(20);
    expect([...found].filter((c) => !isPcdsErrorCode(c))).toEqual([]);
  });

  it('an undocumented code received from outside becomes unknown_code', () => {
    expect(pcdsErrorCode('insufficient_credits')).toBe('insufficient_credits');
    expect(pcdsErrorCode('brand_new_code')).toBe('unknown_code');
    expect(pcdsErrorCode(undefined)).toBe('unknown_code');
  });
});

describe('PcdsError', () => {
  const errors: [PcdsError, string, PcdsErrorCode][] = [
    [new PcdsCallError('poll_timeout', 'm', 'call-x'), 'PcdsCallError', 'poll_timeout'],
    [new PcdsUsageError('invalid_params', 'm'), 'PcdsUsageError', 'invalid_params'],
    [new BatchSetupError('batch_exists', 'm'), 'BatchSetupError', 'batch_exists'],
    [new ServiceError('invalid_month', 400, 'm'), 'ServiceError', 'invalid_month'],
    [new TransportError('connect', 'ECONNREFUSED'), 'TransportError', 'transport_error'],
    [new UnknownKeyError('m'), 'UnknownKeyError', 'unknown_key'],
    [new PermitRefusedError('k1', 0), 'PermitRefusedError', 'insufficient_credits'],
    [new UnknownThrottleError('k1'), 'UnknownThrottleError', 'unknown_throttle'],
    [new CallbackUrlRefusedError('m'), 'CallbackUrlRefusedError', 'invalid_callback_url'],
    [new ConfigError('m'), 'ConfigError', 'invalid_config'],
    [new WebhookConfigError('m'), 'WebhookConfigError', 'invalid_config'],
    [new UsageError('m'), 'UsageError', 'invalid_usage'],
    [new CliError('m'), 'CliError', 'command_failed'],
    [new PortInUseError('m'), 'CliError', 'port_in_use'],
    [new NotFound('call_not_found', 'm'), 'NotFound', 'call_not_found'],
    [
      new TemporalCliError('TEMPORAL_CLI_ENV_INVALID', 'm'),
      'TemporalCliError',
      'TEMPORAL_CLI_ENV_INVALID',
    ],
    [
      new TemporalConnectionError('m', 'unreachable', 'PCDS_TEMPORAL_ADDRESS'),
      'TemporalConnectionError',
      'temporal_unreachable',
    ],
    [new EmulatorOptionsError('m'), 'EmulatorOptionsError', 'invalid_options'],
    [new KeySettingsError('id', 'm'), 'KeySettingsError', 'invalid_request'],
    [new StoreSealError('m'), 'StoreSealError', 'store_unreadable'],
    [new StoreConfigError('m'), 'StoreConfigError', 'invalid_store_url'],
    [new BatchStoreError('no_such_batch', 'm'), 'BatchStoreError', 'no_such_batch'],
    [new LoadError('input_not_readable', 'm'), 'LoadError', 'input_not_readable'],
    [new ColumnError('m'), 'ColumnError', 'invalid_input_file'],
    [new EncodingError('m'), 'EncodingError', 'invalid_options'],
    [new OutputUnwritableError('ENOSPC', 'm'), 'OutputUnwritableError', 'output_unwritable'],
    [new InputError('m'), 'InputError', 'invalid_input_file'],
  ];
  it.each(errors)('%s is a PcdsError named %s with code %s', (err, name, code) => {
    expect(err).toBeInstanceOf(PcdsError);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe(name);
    expect(err.code).toBe(code);
    expect(isPcdsErrorCode(err.code)).toBe(true);
  });
});

describe('the error classes of src/', () => {
  // `class X extends Error`: only the base, and the emulated service's JSON-RPC wire error (whose
  // `code` is the JSON-RPC number the MCP SDK sends); every other class extends one of them.
  const EXTENDS_ERROR = /\bclass\s+(\w+)\s+extends\s+Error\b/g;
  it('extend PcdsError, so each carries a code of the list', () => {
    const direct: string[] = [];
    for (const file of sourceFiles(join(projectRoot(), 'src')))
      for (const m of readFileSync(file, 'utf8').matchAll(EXTENDS_ERROR)) direct.push(m[1]);
    expect(direct.sort()).toEqual(['PcdsError', 'RpcFailure']);
  });
});
