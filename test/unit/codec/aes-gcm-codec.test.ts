// The payload codec on its own: sealed payloads hide their content, open with the key that sealed
// them (older keys included), refuse tampering and unknown keys, and let clear payloads through.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { AesGcmPayloadCodec, ENCRYPTED_ENCODING } from '../../../src/codec/aes-gcm-codec.js';
import { ensureDevEncryptionKey } from '../../../src/codec/dev-key.js';
import {
  encryptionSettingsFromEnv,
  keyringFromSettings,
  NO_KEY_MESSAGE,
} from '../../../src/codec/settings.js';
import { dataConverterFromEnv } from '../../../src/temporal/data-converter.js';

const b64 = () => randomBytes(32).toString('base64');
const codecFor = (env: NodeJS.ProcessEnv) =>
  new AesGcmPayloadCodec(keyringFromSettings(encryptionSettingsFromEnv(env))!);
const email = 'ada.lovelace@example.com';
const payload = () => defaultPayloadConverter.toPayload({ email });
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('latin1');

describe('AesGcmPayloadCodec', () => {
  it('seals a payload whole and opens it again', async () => {
    const codec = codecFor({ PCDS_ENCRYPTION_KEY: b64(), PCDS_ENCRYPTION_KEY_ID: 'k7' });
    const [sealed] = await codec.encode([payload()]);
    expect(text(sealed.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(text(sealed.metadata!['encryption-key-id'])).toBe('k7');
    expect(text(sealed.data)).not.toContain(email);
    expect(text(sealed.data)).not.toContain('json/plain');
    const [opened] = await codec.decode([sealed]);
    expect(defaultPayloadConverter.fromPayload(opened)).toEqual({ email });
  });

  it('passes payloads that carry no encryption through, both ways of a decode', async () => {
    const codec = codecFor({ PCDS_ENCRYPTION_KEY: b64() });
    const clear = payload();
    const [out] = await codec.decode([clear]);
    expect(out).toBe(clear);
  });

  it('opens with an older key after a rotation, and seals with the current one', async () => {
    const old = b64();
    const before = codecFor({ PCDS_ENCRYPTION_KEY: old, PCDS_ENCRYPTION_KEY_ID: 'k1' });
    const [sealedBefore] = await before.encode([payload()]);
    const after = codecFor({
      PCDS_ENCRYPTION_KEY: b64(),
      PCDS_ENCRYPTION_KEY_ID: 'k2',
      PCDS_ENCRYPTION_PREVIOUS_KEYS: `k1:${old}`,
    });
    const [opened] = await after.decode([sealedBefore]);
    expect(defaultPayloadConverter.fromPayload(opened)).toEqual({ email });
    const [sealedAfter] = await after.encode([payload()]);
    expect(text(sealedAfter.metadata!['encryption-key-id'])).toBe('k2');
    // The retired key cannot read what the new one sealed.
    await expect(before.decode([sealedAfter])).rejects.toThrow('no encryption key "k2"');
  });

  it('refuses a tampered payload, and one sealed under the same id with another key', async () => {
    const codec = codecFor({ PCDS_ENCRYPTION_KEY: b64() });
    const [sealed] = await codec.encode([payload()]);
    const data = Uint8Array.from(sealed.data!);
    data[20] = data[20] ^ 1;
    await expect(codec.decode([{ ...sealed, data }])).rejects.toThrow('does not open with key');
    const other = codecFor({ PCDS_ENCRYPTION_KEY: b64() });
    await expect(other.decode([sealed])).rejects.toThrow('does not open with key "k1"');
  });
});

describe('encryption settings', () => {
  it('refuses to build a data converter without a key unless encryption is off', () => {
    expect(() => dataConverterFromEnv({})).toThrow(NO_KEY_MESSAGE);
    expect(NO_KEY_MESSAGE).toContain('PCDS_ENCRYPTION=off');
    expect(dataConverterFromEnv({ PCDS_ENCRYPTION: 'off' })).toEqual({});
    expect(dataConverterFromEnv({ PCDS_ENCRYPTION_KEY: b64() }).payloadCodecs).toHaveLength(1);
  });

  it('refuses a key of the wrong size without echoing it', () => {
    const short = randomBytes(16).toString('base64');
    const call = () => dataConverterFromEnv({ PCDS_ENCRYPTION_KEY: short });
    expect(call).toThrow('PCDS_ENCRYPTION_KEY must be 32 bytes in base64');
    try {
      call();
    } catch (err) {
      expect((err as Error).message).not.toContain(short);
    }
    expect(() =>
      dataConverterFromEnv({
        PCDS_ENCRYPTION_KEY: b64(),
        PCDS_ENCRYPTION_PREVIOUS_KEYS: 'nocolon',
      }),
    ).toThrow('PCDS_ENCRYPTION_PREVIOUS_KEYS');
  });

  it('reads the key from a file, and makes the development key once, readable by its owner only', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcds-key-'));
    const path = ensureDevEncryptionKey(join(dir, 'data'));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const key = readFileSync(path, 'utf8');
    expect(Buffer.from(key.trim(), 'base64')).toHaveLength(32);
    expect(ensureDevEncryptionKey(join(dir, 'data'))).toBe(path);
    expect(readFileSync(path, 'utf8')).toBe(key);
    expect(dataConverterFromEnv({ PCDS_ENCRYPTION_KEY_FILE: path }).payloadCodecs).toHaveLength(1);
    writeFileSync(join(dir, 'bad'), 'not a key', { mode: 0o600 });
    expect(() => dataConverterFromEnv({ PCDS_ENCRYPTION_KEY_FILE: join(dir, 'bad') })).toThrow(
      'PCDS_ENCRYPTION_KEY_FILE must be 32 bytes',
    );
  });
});
