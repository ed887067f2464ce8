// Outside `pcds dev`, nothing sends person data to Temporal without a key: the worker and the
// commands that start workflows refuse, naming the settings, before they connect anywhere.
import { describe, expect, it } from 'vitest';
import { runCli, spawnCli, STACK_FRAME } from './cli-env.js';

// Nothing listens there: a refusal comes before any connection.
const env = { PCDS_TEMPORAL_ADDRESS: '127.0.0.1:1' };

describe('payload encryption is required', () => {
  it('pcds worker refuses to start without a key, naming the key settings and the off switch', async () => {
    const r = await runCli(['worker'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: no payload encryption key: set PCDS_ENCRYPTION_KEY/m);
    expect(r.stderr).toContain('PCDS_ENCRYPTION_KEY_FILE');
    expect(r.stderr).toContain('PCDS_ENCRYPTION=off');
    expect(r.stderr).not.toMatch(STACK_FRAME);
  });

  it('pcds call refuses as well; with PCDS_ENCRYPTION=off it goes on to connect', async () => {
    const args = ['call', 'person_enrichment', '--email', 'ada@example.com'];
    const refused = await runCli(args, env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('PCDS_ENCRYPTION=off');
    const off = await runCli(args, { ...env, PCDS_ENCRYPTION: 'off' });
    expect(off.code).toBe(1);
    expect(off.stderr).toMatch(/^error: cannot reach Temporal at 127\.0\.0\.1:1/m);
  });

  it('pcds worker refuses to start without the id secret (keyed store lookups), encryption on or off', async () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    for (const settings of [{ PCDS_ENCRYPTION_KEY: key }, { PCDS_ENCRYPTION: 'off' }] as Record<
      string,
      string
    >[]) {
      const r = await runCli(['worker'], { ...env, ...settings });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /^error: the store keys its lookups and erasure subjects with the id secret/m,
      );
      expect(r.stderr).toContain('PCDS_ID_SECRET_FILE');
      // Refused before it tried to connect anywhere.
      expect(r.stderr).not.toMatch(/cannot reach Temporal/);
      expect(r.stderr).not.toMatch(STACK_FRAME);
    }
  });

  it('a key of the wrong size is refused without being echoed', async () => {
    const key = Buffer.from('too short').toString('base64');
    const r = await runCli(['worker'], { ...env, PCDS_ENCRYPTION_KEY: key });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('PCDS_ENCRYPTION_KEY must be 32 bytes in base64');
    expect(r.stderr).not.toContain(key);
  });
});

describe('pcds codec-server', () => {
  const key = Buffer.alloc(32, 7).toString('base64');

  it('refuses to start without an access token, naming the setting', async () => {
    const r = await runCli(['codec-server'], {
      PCDS_ENCRYPTION_KEY: key,
      PCDS_CODEC_SERVER_PORT: '0',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: no access token: set PCDS_CODEC_SERVER_TOKEN/m);
    expect(r.stderr).not.toMatch(STACK_FRAME);
  });

  it('serves the codec protocol with the token until SIGTERM, and never prints the token', async () => {
    const token = 'codec-token-0123456789abcdef';
    const child = spawnCli(['codec-server'], {
      PCDS_ENCRYPTION_KEY: key,
      PCDS_CODEC_SERVER_PORT: '0',
      PCDS_CODEC_SERVER_TOKEN: token,
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no address in: ${stderr}`)), 15_000);
        child.stderr?.on('data', () => {
          const m =
            /codec server on (http:\/\/\S+) for namespace default, browsers from http:\/\/127\.0\.0\.1:8233/.exec(
              stderr,
            );
          if (m) {
            clearTimeout(timer);
            resolve(m[1]);
          }
        });
      });
      const headers = { 'content-type': 'application/json', 'x-namespace': 'default' };
      const body = JSON.stringify({ payloads: [] });
      const refused = await fetch(`${url}/decode`, { method: 'POST', headers, body });
      expect(refused.status).toBe(401);
      const served = await fetch(`${url}/decode`, {
        method: 'POST',
        headers: { ...headers, authorization: `Bearer ${token}` },
        body,
      });
      expect(served.status).toBe(200);
      expect(await served.json()).toEqual({ payloads: [] });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await closed).toBe(0);
    expect(stderr).not.toContain(token);
  });
});
