// The one place Temporal clients and workers get their data converter: the AES-GCM payload codec
// with the configured keys, and failures whose messages and stack traces are encoded (so the
// codec encrypts them too). Every client (library, CLI, webhook receiver, throttle) and every
// worker is built through here.
import { fileURLToPath } from 'node:url';
import { Client, type ConnectionLike } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { AesGcmPayloadCodec } from '../codec/aes-gcm-codec.js';
import {
  encryptionSettingsFromEnv,
  keyringFromSettings,
  type EncryptionSettings,
} from '../codec/settings.js';

/** The module exporting `failureConverter`; workers bundle it into the workflow code as well. */
export const FAILURE_CONVERTER_PATH = fileURLToPath(
  new URL('./failure-converter.cjs', import.meta.url),
);

/** The codec from settings, or undefined with PCDS_ENCRYPTION=off; no key while on is an error. */
export function payloadCodecFromSettings(s: EncryptionSettings): AesGcmPayloadCodec | undefined {
  const keyring = keyringFromSettings(s);
  return keyring ? new AesGcmPayloadCodec(keyring) : undefined;
}

/** The data converter of every client and worker; plain (the SDK's default) when encryption is off. */
export function dataConverterFromSettings(s: EncryptionSettings): DataConverter {
  const codec = payloadCodecFromSettings(s);
  if (!codec) return {};
  return { payloadCodecs: [codec], failureConverterPath: FAILURE_CONVERTER_PATH };
}

/** The same, from PCDS_ENCRYPTION* in the environment (for callers that take no Config). */
export function dataConverterFromEnv(env: NodeJS.ProcessEnv = process.env): DataConverter {
  return dataConverterFromSettings(encryptionSettingsFromEnv(env));
}

/** A client with the configured namespace and data converter. */
export function temporalClient(
  connection: ConnectionLike,
  config: EncryptionSettings & { PCDS_TEMPORAL_NAMESPACE: string },
): Client {
  return new Client({
    connection,
    namespace: config.PCDS_TEMPORAL_NAMESPACE,
    dataConverter: dataConverterFromSettings(config),
  });
}
