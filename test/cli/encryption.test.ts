// Outside `pcds dev`, nothing sends person data to Temporal without a key: the worker and the
// commands that start workflows refuse, naming the settings, before they connect anywhere.
import { describe, expect, it } from 'vitest';
import { runCli, STACK_FRAME } from './cli-env.js';

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

  it('a key of the wrong size is refused without being echoed', async () => {
    const key = Buffer.from('too short').toString('base64');
    const r = await runCli(['worker'], { ...env, PCDS_ENCRYPTION_KEY: key });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('PCDS_ENCRYPTION_KEY must be 32 bytes in base64');
    expect(r.stderr).not.toContain(key);
  });
});
