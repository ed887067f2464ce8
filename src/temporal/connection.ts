// The one way the project connects to Temporal: a client connection or a worker's native one, in
// plain, TLS, mutual TLS or with a Temporal Cloud API key, and a failure that names the setting to fix.
import { PcdsError } from '../contract/pcds-error.js';
import { readFileSync } from 'node:fs';
import { isIP, Socket, connect as tcpConnect } from 'node:net';
import {
  checkServerIdentity,
  connect as tlsConnect,
  createSecureContext,
  type ConnectionOptions,
} from 'node:tls';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { ConfigError } from '../config-error.js';
import { clientInterceptors } from './closed-channel.js';
import { readSecretFile } from '../files/secret-file.js';

/** PEM text, or the path of a PEM file (read at each connect: a restart picks up renewed files). */
export type PemSource = string;

export interface TemporalTlsOptions {
  /** The client certificate for mutual TLS (with `key`). */
  cert?: PemSource;
  key?: PemSource;
  /** The CA that signed the server's certificate; default: the system's trusted roots. */
  ca?: PemSource;
  /** The name the server's certificate must carry, when the address does not (also sent as SNI). */
  serverName?: string;
}

export interface TemporalConnectionOptions {
  /** host:port of the frontend. */
  address: string;
  /** Default: TLS when any TLS option or an API key is given, plain otherwise. */
  tls?: boolean | TemporalTlsOptions;
  /** Sent as `Authorization: Bearer <key>`, as Temporal Cloud expects; implies TLS. */
  apiKey?: string;
  /** How long a client connection waits for the server; default: the SDK's. */
  connectTimeoutMs?: number;
  /** The namespace the connection serves, for a permission error's message. */
  namespace?: string;
  /**
   * false: a failure is thrown as the SDK gives it, without probing the server for its cause
   * (for loops that wait for a server to come up). Default true.
   */
  explain?: boolean;
}

/** The PCDS_TEMPORAL_* settings a connection is made from (a Config from config.ts has them). */
export interface TemporalSettings {
  PCDS_TEMPORAL_ADDRESS: string;
  PCDS_TEMPORAL_NAMESPACE: string;
  PCDS_TEMPORAL_TLS?: boolean | undefined;
  PCDS_TEMPORAL_TLS_CERT?: string | undefined;
  PCDS_TEMPORAL_TLS_KEY?: string | undefined;
  PCDS_TEMPORAL_TLS_CA?: string | undefined;
  PCDS_TEMPORAL_TLS_SERVER_NAME?: string | undefined;
  PCDS_TEMPORAL_API_KEY?: string | undefined;
}

/** The connection settings of a configuration (PCDS_TEMPORAL_*). */
export function temporalConnectionOptions(config: TemporalSettings): TemporalConnectionOptions {
  const tlsSet = {
    ...(config.PCDS_TEMPORAL_TLS_CERT ? { cert: config.PCDS_TEMPORAL_TLS_CERT } : {}),
    ...(config.PCDS_TEMPORAL_TLS_KEY ? { key: config.PCDS_TEMPORAL_TLS_KEY } : {}),
    ...(config.PCDS_TEMPORAL_TLS_CA ? { ca: config.PCDS_TEMPORAL_TLS_CA } : {}),
    ...(config.PCDS_TEMPORAL_TLS_SERVER_NAME
      ? { serverName: config.PCDS_TEMPORAL_TLS_SERVER_NAME }
      : {}),
  };
  const tls =
    config.PCDS_TEMPORAL_TLS === false
      ? false
      : Object.keys(tlsSet).length > 0
        ? tlsSet
        : config.PCDS_TEMPORAL_TLS;
  return {
    address: config.PCDS_TEMPORAL_ADDRESS,
    namespace: config.PCDS_TEMPORAL_NAMESPACE,
    ...(tls !== undefined ? { tls } : {}),
    ...(config.PCDS_TEMPORAL_API_KEY ? { apiKey: config.PCDS_TEMPORAL_API_KEY } : {}),
  };
}

/** The settings each option comes from, for messages. */
const SETTING = {
  cert: 'PCDS_TEMPORAL_TLS_CERT',
  key: 'PCDS_TEMPORAL_TLS_KEY',
  ca: 'PCDS_TEMPORAL_TLS_CA',
  serverName: 'PCDS_TEMPORAL_TLS_SERVER_NAME',
  apiKey: 'PCDS_TEMPORAL_API_KEY',
  address: 'PCDS_TEMPORAL_ADDRESS',
  namespace: 'PCDS_TEMPORAL_NAMESPACE',
} as const;

/**
 * PEM bytes from a setting: the text itself when it holds a PEM block (a `\n` written as two
 * characters, as env files often do, counts as a line break), else the file it names. Errors name
 * the setting, never its value.
 */
export function readPem(value: PemSource, setting: string): Buffer {
  if (value.includes('-----BEGIN')) return Buffer.from(value.replace(/\\n/g, '\n'));
  let text: Buffer;
  // The client's private key is a secret file: refused when other users can read it.
  if (setting === SETTING.key) text = readSecretFile(value, setting, 'the key file');
  else
    try {
      text = readFileSync(value);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      throw new ConfigError(
        `${setting}: the file cannot be read (${code}); give a PEM file or PEM text`,
      );
    }
  if (!text.includes('-----BEGIN'))
    throw new ConfigError(`${setting}: the file holds no PEM block (-----BEGIN ...)`);
  return text;
}

interface ResolvedTls {
  serverRootCACertificate?: Buffer;
  clientCertPair?: { crt: Buffer; key: Buffer };
  serverNameOverride?: string;
}

export interface ResolvedConnectionOptions {
  address: string;
  namespace?: string;
  tls: ResolvedTls | undefined;
  apiKey: string | undefined;
  connectTimeoutMs: number | undefined;
}

/** Reads the PEM files and checks them (a key that does not match its certificate, a bad CA). */
export function resolveConnectionOptions(o: TemporalConnectionOptions): ResolvedConnectionOptions {
  const given = typeof o.tls === 'object' ? o.tls : {};
  if (o.apiKey !== undefined && o.apiKey.length === 0)
    throw new ConfigError(`${SETTING.apiKey} is empty`);
  if (o.tls === false && (o.apiKey || Object.keys(given).length > 0))
    throw new ConfigError(
      `PCDS_TEMPORAL_TLS=false, yet ${o.apiKey ? SETTING.apiKey : 'a PCDS_TEMPORAL_TLS_* setting'} is set: an API key and certificates go over TLS only`,
    );
  const useTls = o.tls === true || typeof o.tls === 'object' || o.apiKey !== undefined;
  if (!useTls)
    return {
      address: o.address,
      ...(o.namespace ? { namespace: o.namespace } : {}),
      tls: undefined,
      apiKey: undefined,
      connectTimeoutMs: o.connectTimeoutMs,
    };
  if (!given.cert !== !given.key)
    throw new ConfigError(
      `${SETTING.cert} and ${SETTING.key} go together: set both (the client certificate and its key)`,
    );
  const tls: ResolvedTls = {};
  if (given.ca) {
    tls.serverRootCACertificate = readPem(given.ca, SETTING.ca);
    try {
      createSecureContext({ ca: tls.serverRootCACertificate });
    } catch (err) {
      throw new ConfigError(`${SETTING.ca}: not a usable PEM certificate (${errCode(err)})`);
    }
  }
  if (given.cert && given.key) {
    const crt = readPem(given.cert, SETTING.cert);
    const key = readPem(given.key, SETTING.key);
    try {
      createSecureContext({ cert: crt, key });
    } catch (err) {
      const code = errCode(err);
      throw new ConfigError(
        /KEY_VALUES_MISMATCH/.test(code)
          ? `${SETTING.cert} and ${SETTING.key} do not belong together (the key is not the certificate's)`
          : `${SETTING.cert}/${SETTING.key}: not a usable PEM certificate and key (${code})`,
      );
    }
    tls.clientCertPair = { crt, key };
  }
  if (given.serverName) tls.serverNameOverride = given.serverName;
  return {
    address: o.address,
    ...(o.namespace ? { namespace: o.namespace } : {}),
    tls,
    apiKey: o.apiKey,
    connectTimeoutMs: o.connectTimeoutMs,
  };
}

const errCode = (err: unknown): string => {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : 'error';
};

/** The SDK's options of a client connection (Connection.connect). */
export function clientConnectionOptions(r: ResolvedConnectionOptions) {
  return {
    address: r.address,
    ...(r.tls ? { tls: r.tls } : {}),
    ...(r.apiKey ? { apiKey: r.apiKey } : {}),
    ...(r.connectTimeoutMs !== undefined ? { connectTimeout: r.connectTimeoutMs } : {}),
  };
}

/** The SDK's options of a worker's native connection (NativeConnection.connect). */
export function nativeConnectionOptions(r: ResolvedConnectionOptions) {
  return {
    address: r.address,
    ...(r.tls ? { tls: r.tls } : {}),
    ...(r.apiKey ? { apiKey: r.apiKey } : {}),
  };
}

/** A client connection (clients, the webhook receiver, `pcds mcp`, the CLI). */
export async function connectTemporalClient(o: TemporalConnectionOptions): Promise<Connection> {
  const r = resolveConnectionOptions(o);
  try {
    return await Connection.connect({
      ...clientConnectionOptions(r),
      interceptors: clientInterceptors(),
    });
  } catch (err) {
    if (o.explain === false) throw err;
    throw await explainConnectFailure(err, r);
  }
}

/** A worker's native connection (Rust core; its connect makes a first call, as clients do). */
export async function connectTemporalNative(
  o: TemporalConnectionOptions,
): Promise<NativeConnection> {
  const r = resolveConnectionOptions(o);
  // Loaded here: a client-only process (createPcdsClient, the CLI) never loads the worker's core.
  const { NativeConnection } = await import('@temporalio/worker');
  try {
    return await NativeConnection.connect(nativeConnectionOptions(r));
  } catch (err) {
    if (o.explain === false) throw err;
    throw await explainConnectFailure(err, r);
  }
}

// ---- failures ---------------------------------------------------------------------------------

/** Which setting a connection failure points at. */
export type ConnectionProblem =
  | 'unreachable'
  | 'unknown_ca'
  | 'server_name'
  | 'client_certificate'
  | 'tls_required'
  | 'not_tls'
  | 'api_key'
  | 'permission';

/**
 * Temporal cannot be reached or refuses this client. `code` is stable for callers (every problem is
 * `temporal_unreachable`); `problem` and `setting` say what to fix. No credential is ever in it.
 */
export class TemporalConnectionError extends PcdsError {
  override name = 'TemporalConnectionError';
  override readonly code = 'temporal_unreachable';
  constructor(
    message: string,
    readonly problem: ConnectionProblem,
    readonly setting: string,
  ) {
    super('temporal_unreachable', message);
  }
}

/** What the transport said: a Node socket/TLS error code, or how the server ended the handshake. */
export type TransportOutcome =
  | { ok: true }
  | { ok: false; stage: 'tcp' | 'tls' | 'after-handshake'; code: string }
  /** A plain connection was asked for, but the server speaks TLS. */
  | { ok: false; stage: 'speaks-tls'; code: 'TLS' };

/** Node's codes for a server certificate that no trusted CA signed. */
const UNTRUSTED_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
]);

/** gRPC status codes a server answers bad credentials with. */
const GRPC_UNAUTHENTICATED = 16;
const GRPC_PERMISSION_DENIED = 7;

interface FailureContext {
  address: string;
  namespace?: string | undefined;
  tls: boolean;
  clientCert: boolean;
  apiKey: boolean;
}

/** The message and setting of a transport failure (pure: unit-tested on its own). */
export function transportProblem(
  outcome: Exclude<TransportOutcome, { ok: true }>,
  ctx: FailureContext,
): TemporalConnectionError {
  const at = `Temporal at ${ctx.address}`;
  const { code } = outcome;
  if (outcome.stage === 'speaks-tls')
    return new TemporalConnectionError(
      `${at} speaks TLS and this client connected in plain: set ${SETTING.ca} (or PCDS_TEMPORAL_TLS=true for a publicly trusted server) and, for mutual TLS, ${SETTING.cert} and ${SETTING.key}`,
      'tls_required',
      SETTING.ca,
    );
  if (outcome.stage === 'tcp')
    return new TemporalConnectionError(
      `cannot reach Temporal at ${ctx.address} (${code}): is the server running, or \`pcds dev\`? Check ${SETTING.address}`,
      'unreachable',
      SETTING.address,
    );
  if (outcome.stage === 'tls' && UNTRUSTED_CODES.has(code))
    return new TemporalConnectionError(
      `${at}: its certificate is not signed by a CA this client trusts (${code}): set ${SETTING.ca} to the CA that signed the server's certificate`,
      'unknown_ca',
      SETTING.ca,
    );
  if (outcome.stage === 'tls' && code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return new TemporalConnectionError(
      `${at}: its certificate is for another name (${code}): set ${SETTING.serverName} to a name the certificate carries`,
      'server_name',
      SETTING.serverName,
    );
  // A server that does not speak TLS answers the handshake with something else than TLS.
  if (outcome.stage === 'tls' && /WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG|^EPROTO$/.test(code))
    return new TemporalConnectionError(
      `${at} does not speak TLS (${code}): check ${SETTING.address}, or unset the PCDS_TEMPORAL_TLS_* settings and ${SETTING.apiKey} for a plain server`,
      'not_tls',
      SETTING.address,
    );
  // An alert from the server, or a close right after the handshake: it wants another client certificate.
  if (/ALERT|^ECONNRESET$|^EPIPE$|^CLOSED$/.test(code) || outcome.stage === 'after-handshake')
    return new TemporalConnectionError(
      ctx.clientCert
        ? `${at} refused this client's certificate (${code}): set ${SETTING.cert} and ${SETTING.key} to a certificate signed by a CA the server trusts`
        : `${at} requires a client certificate (mutual TLS) (${code}): set ${SETTING.cert} and ${SETTING.key}`,
      'client_certificate',
      SETTING.cert,
    );
  return new TemporalConnectionError(
    `${at}: the TLS handshake failed (${code}): check ${SETTING.ca}, ${SETTING.cert}/${SETTING.key} and ${SETTING.serverName}`,
    'client_certificate',
    SETTING.cert,
  );
}

/** The message and setting of a gRPC status the server answered with, if it is about credentials. */
export function statusProblem(
  status: number,
  ctx: FailureContext,
): TemporalConnectionError | undefined {
  const at = `Temporal at ${ctx.address}`;
  if (status === GRPC_UNAUTHENTICATED)
    return new TemporalConnectionError(
      ctx.apiKey
        ? `${at} refused the API key (UNAUTHENTICATED): check ${SETTING.apiKey} (a valid, unexpired key)`
        : `${at} requires credentials (UNAUTHENTICATED): set ${SETTING.apiKey}, or ${SETTING.cert} and ${SETTING.key}`,
      'api_key',
      SETTING.apiKey,
    );
  if (status === GRPC_PERMISSION_DENIED)
    return new TemporalConnectionError(
      `${at}: these credentials may not use namespace ${ctx.namespace ?? '(default)'} (PERMISSION_DENIED): check ${SETTING.namespace} and the permissions of ${ctx.apiKey ? SETTING.apiKey : SETTING.cert}`,
      'permission',
      ctx.apiKey ? SETTING.apiKey : SETTING.namespace,
    );
  return undefined;
}

/** The gRPC status of a client error (Connection.connect wraps it as `cause`). */
function grpcStatusOf(err: unknown): number | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; depth++) {
    if (isGrpcServiceError(e)) return e.code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

const splitAddress = (address: string): { host: string; port: number } => {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(address);
  return m ? { host: m[1], port: Number(m[2]) } : { host: address, port: 7233 };
};

/**
 * Opens a socket (TLS as configured) to the frontend and reports how it went: the Node error code
 * of a refused connection or a failed handshake, or a server that hangs up once the handshake is
 * done (TLS 1.3 servers check the client's certificate after it). A gRPC server's first bytes (its
 * SETTINGS frame) mean the transport is fine.
 */
export function probeTransport(
  r: ResolvedConnectionOptions,
  waitMs = 3_000,
): Promise<TransportOutcome> {
  const { host, port } = splitAddress(r.address);
  return new Promise((resolve) => {
    let handshakeDone = false;
    let settled = false;
    let socket: Socket;
    const finish = (outcome: TransportOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const failed = (err: NodeJS.ErrnoException) =>
      finish({
        ok: false,
        stage:
          err.syscall === 'connect' || err.syscall === 'getaddrinfo'
            ? 'tcp'
            : handshakeDone
              ? 'after-handshake'
              : 'tls',
        code: err.code ?? 'EPROTO',
      });
    const timer = setTimeout(
      () =>
        handshakeDone || !r.tls
          ? finish({ ok: true })
          : finish({ ok: false, stage: 'tcp', code: 'ETIMEDOUT' }),
      waitMs,
    );
    if (r.tls) {
      const name = r.tls.serverNameOverride ?? (isIP(host) ? undefined : host);
      const options: ConnectionOptions = {
        host,
        port,
        ALPNProtocols: ['h2'],
        ...(name ? { servername: name } : {}),
        ...(r.tls.serverRootCACertificate ? { ca: r.tls.serverRootCACertificate } : {}),
        ...(r.tls.clientCertPair
          ? { cert: r.tls.clientCertPair.crt, key: r.tls.clientCertPair.key }
          : {}),
      };
      // gRPC checks the certificate against the override name as well, not only the host.
      if (name) options.checkServerIdentity = (_host, cert) => checkServerIdentity(name, cert);
      const tlsSocket = tlsConnect(options);
      socket = tlsSocket;
      tlsSocket.once('secureConnect', () => {
        handshakeDone = true;
      });
      tlsSocket.once('data', () => finish({ ok: true }));
      tlsSocket.once('error', failed);
      tlsSocket.once('close', () =>
        finish({ ok: false, stage: handshakeDone ? 'after-handshake' : 'tls', code: 'CLOSED' }),
      );
      return;
    }
    socket = tcpConnect({ host, port });
    socket.once('error', failed);
    socket.once('connect', () => {
      clearTimeout(timer);
      settled = true;
      socket.destroy();
      // Connected in plain: does the server want TLS instead? A handshake that completes says so.
      const sniff = tlsConnect({ host, port, rejectUnauthorized: false, ALPNProtocols: ['h2'] });
      const done = (outcome: TransportOutcome) => {
        clearTimeout(sniffTimer);
        sniff.destroy();
        resolve(outcome);
      };
      const sniffTimer = setTimeout(() => done({ ok: true }), waitMs);
      sniff.once('secureConnect', () => done({ ok: false, stage: 'speaks-tls', code: 'TLS' }));
      sniff.once('error', () => done({ ok: true }));
      sniff.once('close', () => done({ ok: true }));
    });
  });
}

/**
 * Turns a failed connect into the error that names the setting to fix: the server's gRPC status
 * when it answered (bad credentials), else what a direct socket to it shows.
 */
export async function explainConnectFailure(
  err: unknown,
  r: ResolvedConnectionOptions,
): Promise<TemporalConnectionError> {
  if (err instanceof TemporalConnectionError) return err;
  const ctx: FailureContext = {
    address: r.address,
    namespace: r.namespace,
    tls: r.tls !== undefined,
    clientCert: r.tls?.clientCertPair !== undefined,
    apiKey: r.apiKey !== undefined,
  };
  const status = grpcStatusOf(err);
  const byStatus = status !== undefined ? statusProblem(status, ctx) : undefined;
  if (byStatus) return byStatus;
  const transport = await probeTransport(r);
  if (!transport.ok) return transportProblem(transport, ctx);
  // The transport is fine: the native core's error carries no status; a client call gets it.
  if (status === undefined) {
    try {
      const probe = await Connection.connect({
        ...clientConnectionOptions(r),
        connectTimeout: 5_000,
      });
      await probe.close();
    } catch (again) {
      const second = grpcStatusOf(again);
      const problem = second !== undefined ? statusProblem(second, ctx) : undefined;
      if (problem) return problem;
    }
  }
  return new TemporalConnectionError(
    `cannot reach Temporal at ${r.address} (${redact(err, r.apiKey)}): check ${SETTING.address}`,
    'unreachable',
    SETTING.address,
  );
}

/** The first line of an error's message, without the API key should a layer below have echoed it. */
function redact(err: unknown, apiKey: string | undefined): string {
  const text = (err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 300);
  return apiKey ? text.split(apiKey).join('[redacted]') : text;
}
