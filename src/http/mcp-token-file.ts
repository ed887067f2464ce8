// The worker's OAuth grants for the MCP endpoint, kept in one file under the data folder and
// encrypted at rest (AES-256-GCM). The key comes from PCDS_MCP_TOKEN_KEY or from a key file made
// once with mode 0600 beside the tokens. Every write is atomic (temporary file, fsync, rename), so
// a crash leaves either the old grants or the new ones, never a torn file.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rm, stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { PcdsError } from '../contract/index.js';
import { ensureKeyFile } from '../codec/dev-key.js';
import { writeFileAtomic } from '../files/atomic-write.js';
import { readSecretFile } from '../files/secret-file.js';

/** One key id's grant: what a refresh needs, and the tokens. Non-secret fields name the server. */
export const storedGrantSchema = z.object({
  clientId: z.string().min(1),
  /** Token endpoint and issuer of the authorization server (from its metadata). */
  tokenEndpoint: z.url(),
  issuer: z.string().min(1),
  /** The protected resource the tokens are bound to (RFC 8707). */
  resource: z.string().min(1),
  scope: z.string().optional(),
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1).optional(),
  /** Epoch ms after which the access token is taken as expired. */
  expiresAt: z.number().optional(),
});
export type StoredGrant = z.infer<typeof storedGrantSchema>;

const contentSchema = z.object({
  version: z.literal(1),
  grants: z.record(z.string(), storedGrantSchema),
});
export type TokensContent = z.infer<typeof contentSchema>;

const sealedSchema = z.object({
  format: z.literal('pcds-mcp-tokens'),
  version: z.literal(1),
  iv: z.string(),
  tag: z.string(),
  data: z.string(),
});

const AAD = Buffer.from('pcds-mcp-tokens-v1');

export class TokenFileError extends PcdsError {
  override name = 'TokenFileError';
  constructor(message: string) {
    super('mcp_login_required', message);
  }
}

export interface TokenFileOptions {
  /** Tokens file path. */
  path: string;
  /** PCDS_MCP_TOKEN_KEY: 32 bytes, base64 or hex. Without it a key file is used. */
  key?: string;
  /** Key file made on first use (mode 0600) when no key is configured. */
  keyPath: string;
}

/** Where the tokens and their key live under a data folder. */
export function tokenFilePaths(dataDir: string, file?: string) {
  const path = resolve(file ?? join(dataDir, 'mcp-tokens.enc'));
  return { path, keyPath: `${path}.key` };
}

function decodeKey(raw: string): Buffer {
  const v = raw.trim();
  const key = /^[0-9a-f]{64}$/i.test(v) ? Buffer.from(v, 'hex') : Buffer.from(v, 'base64');
  if (key.length !== 32)
    throw new TokenFileError(
      'PCDS_MCP_TOKEN_KEY must be 32 bytes, written as 64 hex digits or in base64',
    );
  return key;
}

/** A lock older than this was left by a process that died while it held it. */
const STALE_LOCK_MS = 30_000;
const LOCK_WAIT_MS = 20_000;

export class EncryptedTokenFile {
  private key?: Buffer;

  constructor(private readonly opts: TokenFileOptions) {}

  get path(): string {
    return this.opts.path;
  }

  /**
   * Runs `fn` holding the file's lock (`<path>.lock`, made exclusively), so worker processes that
   * share the file refresh one at a time: a refresh token is spent once, and the next holder reads
   * the pair the previous one wrote.
   */
  async withLock<T>(fn: () => Promise<T>): Promise<T> {
    const lock = `${this.opts.path}.lock`;
    await mkdir(dirname(lock), { recursive: true, mode: 0o700 });
    const until = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        const fh = await open(lock, 'wx', 0o600);
        await fh.writeFile(String(process.pid));
        await fh.close();
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const held = await stat(lock).catch(() => undefined);
        if (held && Date.now() - held.mtimeMs > STALE_LOCK_MS) await rm(lock, { force: true });
        else if (Date.now() > until)
          throw new TokenFileError(
            `${lock} has been held for over ${LOCK_WAIT_MS / 1000} s: another process is refreshing the tokens`,
          );
        else await sleep(25 + Math.random() * 25);
      }
    }
    try {
      return await fn();
    } finally {
      await rm(lock, { force: true });
    }
  }

  async read(): Promise<TokensContent> {
    let text: string;
    try {
      text = await readFile(this.opts.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, grants: {} };
      throw err;
    }
    const sealed = sealedSchema.safeParse(JSON.parse(text));
    if (!sealed.success)
      throw new TokenFileError(`${this.opts.path} is not a tokens file of pcds (sign in again)`);
    const key = await this.keyFor(false);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.data.iv, 'base64'));
      decipher.setAAD(AAD);
      decipher.setAuthTag(Buffer.from(sealed.data.tag, 'base64'));
      const plain = Buffer.concat([
        decipher.update(Buffer.from(sealed.data.data, 'base64')),
        decipher.final(),
      ]);
      return contentSchema.parse(JSON.parse(plain.toString('utf8')));
    } catch {
      throw new TokenFileError(
        `${this.opts.path} cannot be decrypted with the configured key (PCDS_MCP_TOKEN_KEY or ${this.opts.keyPath}): sign in again with pcds mcp-login`,
      );
    }
  }

  async write(content: TokensContent): Promise<void> {
    const key = await this.keyFor(true);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(AAD);
    const data = Buffer.concat([
      cipher.update(JSON.stringify(contentSchema.parse(content)), 'utf8'),
      cipher.final(),
    ]);
    const sealed = {
      format: 'pcds-mcp-tokens',
      version: 1,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
    };
    await writeFileAtomic(this.opts.path, JSON.stringify(sealed));
  }

  private async keyFor(create: boolean): Promise<Buffer> {
    if (this.key) return this.key;
    if (this.opts.key) return (this.key = decodeKey(this.opts.key));
    const keyPath = this.opts.keyPath;
    if (!(await stat(keyPath).catch(() => undefined))) {
      if (!create)
        throw new TokenFileError(
          `the key file ${keyPath} of ${this.opts.path} is missing: sign in again with pcds mcp-login`,
        );
      ensureKeyFile(keyPath);
    }
    // A secret file: refused when other users can read it.
    const text = readSecretFile(keyPath, 'PCDS_MCP_TOKENS_FILE').toString('utf8');
    return (this.key = decodeKey(text));
  }
}
