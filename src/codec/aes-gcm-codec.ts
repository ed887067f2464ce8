// The payload codec that keeps person data out of Temporal in clear: AES-256-GCM over each whole
// payload (metadata and data), tagged with the id of the key that sealed it so older keys still
// open what they sealed after a rotation. Payloads without its encoding pass through untouched,
// so histories written before encryption was turned on still replay and read.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import {
  METADATA_ENCODING_KEY,
  ValueError,
  type Payload,
  type PayloadCodec,
} from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const METADATA_KEY_ID = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const KEY_BYTES = 32;

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

export interface EncryptionKeyring {
  /** Id of the key that seals new payloads. */
  currentKeyId: string;
  /** Every key that may open a payload, by id (the current one included). 32 bytes each. */
  keys: ReadonlyMap<string, Uint8Array>;
}

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly current: { id: string; key: Uint8Array };

  constructor(private readonly keyring: EncryptionKeyring) {
    const key = keyring.keys.get(keyring.currentKeyId);
    if (!key)
      throw new ValueError(`encryption key "${keyring.currentKeyId}" is not in the keyring`);
    for (const [id, k] of keyring.keys) {
      if (k.length !== KEY_BYTES) throw new ValueError(`encryption key "${id}" is not 32 bytes`);
    }
    this.current = { id: keyring.currentKeyId, key };
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.seal(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.open(payload));
  }

  private seal(payload: Payload): Payload {
    const plain = temporal.api.common.v1.Payload.encode(payload).finish();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: {
        [METADATA_ENCODING_KEY]: utf8.encode(ENCRYPTED_ENCODING),
        [METADATA_KEY_ID]: utf8.encode(this.current.id),
      },
      data: new Uint8Array(sealed),
    };
  }

  private open(payload: Payload): Payload {
    const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
    if (!encoding || fromUtf8.decode(encoding) !== ENCRYPTED_ENCODING) return payload;
    const idBytes = payload.metadata?.[METADATA_KEY_ID];
    if (!idBytes) throw new ValueError('encrypted payload without an encryption key id');
    const keyId = fromUtf8.decode(idBytes);
    const key = this.keyring.keys.get(keyId);
    if (!key) throw new ValueError(`no encryption key "${keyId}" to decrypt this payload`);
    const data = payload.data ?? new Uint8Array();
    if (data.length < IV_BYTES + TAG_BYTES)
      throw new ValueError('encrypted payload too short to hold its nonce and tag');
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([
        decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
    } catch {
      throw new ValueError(`encrypted payload does not open with key "${keyId}"`);
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}
