// `pcds --help`, `pcds call` and `pcds usage` run as child processes against the emulator and a
// worker: help from the catalogue, bad input refused before anything starts, found and empty
// outcomes, and no secret or stack trace in what the command prints.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { callWorkflowId } from '../../src/client.js';
import { ASYNC_ENDPOINTS, ENDPOINTS, getEndpoint } from '../../src/contract/index.js';
import { loadConfig } from '../../src/config.js';
import { sampleRows } from '../../src/emulator/index.js';
import { mcpTokenFile } from '../../src/http/service-clients.js';
import { runCli, sharedCliEnv, STACK_FRAME } from './cli-env.js';

const shared = sharedCliEnv();
const { pcds, outputs } = shared;

const runId = `${process.pid}-${Date.now().toString(36)}`;

/** Lines of a help text under `heading`, up to the next blank line. */
function section(text: string, heading: string): string[] {
  const lines = text.split('\n');
  const start = lines.indexOf(heading);
  expect(start, `"${heading}" in:\n${text}`).toBeGreaterThanOrEqual(0);
  const end = lines.indexOf('', start);
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

describe('help', () => {
  it('pcds --help lists the commands', async () => {
    const r = await pcds('--help');
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const commands = section(r.stdout, 'Commands:')
      .map((l) => /^ {2}(\S+)/.exec(l)?.[1])
      .filter(Boolean);
    expect(commands).toEqual(
      expect.arrayContaining([
        'dev',
        'call',
        'worker',
        'usage',
        'emulator',
        'webhooks',
        'batch',
        'search',
        'demo',
      ]),
    );
  });

  it('an unknown command says it is unknown and exits 2, --help or not, at any level', async () => {
    const runs = await Promise.all([
      pcds('doctr'),
      pcds('doctr', '--help'),
      pcds('help', 'doctr'),
      pcds('batch', 'stats', '--help'),
    ]);
    for (const [r, word] of runs.map(
      (r, i) => [r, ['doctr', 'doctr', 'doctr', 'stats'][i]] as const,
    )) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(new RegExp(`^error: unknown command '${word}'\\n`));
    }
    // The help of a command that exists is still help.
    const help = await pcds('batch', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: pcds batch /);
  });

  it('pcds call --help lists every asynchronous endpoint of the catalogue, once', async () => {
    const r = await pcds('call', '--help');
    expect(r.code).toBe(0);
    const listed = section(r.stdout, 'Endpoints:').map((l) => l.trim().split(/\s+/)[0]);
    expect(listed).toEqual(ASYNC_ENDPOINTS.map((e) => e.name));
    // The synchronous ones (feedback, usage) have no durable call; nothing else is left out.
    expect(ENDPOINTS.filter((e) => !listed.includes(e.name)).map((e) => e.name)).toEqual([
      'person_enrichment_feedback',
      'usage',
    ]);
  });

  it('pcds call <endpoint> --help lists each parameter of the endpoint once, with a type', async () => {
    const names = ['person_enrichment', 'person_search', 'person_newsfeed'];
    const results = await Promise.all(names.map((name) => pcds('call', name, '--help')));
    for (const [i, r] of results.entries()) {
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      const flags = section(r.stdout, 'Parameters:').map((l) => l.trim().split(' ')[0]);
      const shape = (getEndpoint(names[i]).input as z.ZodObject).shape;
      const expected = Object.keys(shape).map((f) => `--${f.replace(/_/g, '-')}`);
      expect(new Set(flags)).toEqual(new Set(expected));
      expect(flags).toHaveLength(expected.length);
      expect(r.stdout).not.toContain('<any>');
    }
    const enrichment = results[0].stdout;
    expect(enrichment).toMatch(/^ {2}--email <email>$/m);
    expect(enrichment).toMatch(/^ {2}--social-media-url <uri>$/m);
    expect(enrichment).toMatch(/^ {2}--lookup-mode <fast\|balanced\|deep> +default deep$/m);
  });

  it('pcds call <endpoint> --help gives each parameter its range, default and whether it is required, from the catalogue', async () => {
    const [search, ask, newsfeed] = await Promise.all(
      ['person_search', 'person_ask', 'person_newsfeed'].map((name) =>
        pcds('call', name, '--help'),
      ),
    );
    const params = (r: { stdout: string }) => section(r.stdout, 'Parameters:');
    const line = (r: { stdout: string }, flag: string) =>
      params(r).find((l) => l.trim().split(' ')[0] === flag);
    expect(line(search, '--limit')).toMatch(/^ {2}--limit <number> +integer 1-100; default 10$/);
    expect(line(search, '--offset')).toMatch(/^ {2}--offset <number> +integer 0-999$/);
    expect(line(search, '--page')).toMatch(/integer >= 1$/);
    expect(line(search, '--type')).toMatch(/<light\|medium\|premium> +default premium$/);
    expect(search.stdout).toContain(
      '\nGive at least one of: --query, --keywords, --custom-filters, --docid-whitelist, --cursor, --request-id.\n',
    );
    expect(line(ask, '--question')).toMatch(/ required$/);
    expect(line(newsfeed, '--limit')).toMatch(/integer 1-1000; default 10$/);
    expect(line(newsfeed, '--posts-after')).toMatch(/YYYY-MM-DD$/);
  });
});

describe('bad input starts nothing', () => {
  const cases: { args: string[]; id?: string; message: RegExp }[] = [
    { args: ['no_such_endpoint'], message: /unknown endpoint "no_such_endpoint"/ },
    {
      args: ['person_enrichment', '--email', 'not-an-email'],
      id: 'person_enrichment',
      message: /\bemail must be an email address/,
    },
    {
      args: ['person_search', '--query', 'engineers', '--limit', '101'],
      id: 'person_search',
      message: /\blimit must be at most 100/,
    },
    {
      args: ['person_enrichment', '--email', 'a@b.example', '--no-such-flag', 'x'],
      id: 'person_enrichment',
      message: /--no-such-flag is not a parameter of person_enrichment/,
    },
    { args: ['person_enrichment'], id: 'person_enrichment', message: /needs at least one of/ },
    {
      args: ['person_enrich', '--email', 'a@b.example', '--transport', 'mcp'],
      id: 'person_enrich',
      message: /person_enrich has no MCP tool/,
    },
    {
      args: ['person_enrichment', '--email', 'a@b.example', '--transport=grpc'],
      id: 'person_enrichment',
      message: /--transport must be one of http, mcp/,
    },
    {
      args: [
        'person_enrichment',
        '--email',
        'a@b.example',
        '--lookup-mode',
        'fast',
        '--transport',
        'mcp',
      ],
      id: 'person_enrichment',
      message: /person_enrichment over MCP: .*lookup_mode/,
    },
  ];

  it('each is refused with exit 2 and a message naming the problem', async () => {
    const before = shared.cli.emulator.stats();
    const results = await Promise.all(
      cases.map((c, i) =>
        // An idempotency key names the workflow that would have started.
        pcds('call', ...c.args, '--id', `refused-${runId}-${i}`),
      ),
    );
    for (const [i, r] of results.entries()) {
      const c = cases[i];
      expect(r.code, `${c.args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(c.message);
      expect(r.stderr).toMatch(/^error: /);
      expect(r.stderr).not.toMatch(STACK_FRAME);
    }
    for (const [i, c] of cases.entries()) {
      if (!c.id) continue;
      await expect(
        shared.cli.client.workflow.getHandle(`call-${c.id}-refused-${runId}-${i}`).describe(),
      ).rejects.toBeInstanceOf(WorkflowNotFoundError);
    }
    const count = await shared.cli.client.workflow.count(`TaskQueue = "${shared.cli.taskQueue}"`);
    expect(count.count).toBe(0);
    expect(shared.cli.emulator.stats()).toEqual(before);
    expect(before.requests).toEqual({});
  });
});

describe('calls', () => {
  const [known] = sampleRows({ rows: 1 });

  it('prints the profile of a known email with outcome found', async () => {
    const r = await pcds('call', 'person_enrichment', '--email', known.email);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      outcome: string;
      status: string;
      result: { best_business_email?: string; altemails?: string[]; displayname?: string };
    };
    expect(out.outcome).toBe('found');
    expect(out.status).toBe('completed');
    expect([out.result.best_business_email, ...(out.result.altemails ?? [])]).toContain(
      known.email,
    );
    expect(out.result.displayname).toEqual(expect.any(String));
    // stderr holds the workflow id (no personal data in it) and the Web UI link, nothing else.
    expect(r.stderr).toMatch(/^call-person_enrichment-[0-9a-f-]{36} \(http:\/\/.+\)\n$/);
    expect(r.stderr).not.toContain(known.email);
  });

  it('an email with spaces around it is the email without them: found, keyed by the trimmed email', async () => {
    const r = await pcds(
      'call',
      'person_enrichment',
      '--email',
      `  ${known.email}\t`,
      '--no-cache',
    );
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { outcome: string; result: { altemails?: string[] } };
    expect(out.outcome).toBe('found');
  });

  it('prints outcome empty for an unknown email', async () => {
    const r = await pcds('call', 'person_enrichment', '--email', 'nobody.cli@unknown.pcds.dev');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      outcome: 'empty',
      requestId: expect.any(String),
      status: 'completed',
      timing: { jobMs: expect.any(Number), polls: expect.any(Number) },
    });
  });

  it('--transport mcp prints the same outcome, through MCP tool calls', async () => {
    // Both go to the service (the cache would answer the second): --no-cache.
    const overHttp = await pcds('call', 'person_enrichment', '--email', known.email, '--no-cache');
    const stats = () => shared.cli.emulator.stats().requests;
    const [submits, toolCalls] = [stats()['POST /person/enrichment'], stats()['POST /mcp'] ?? 0];
    const r = await pcds(
      'call',
      'person_enrichment',
      '--email',
      known.email,
      '--transport',
      'mcp',
      '--no-cache',
    );
    expect(r.code, r.stderr).toBe(0);
    const strip = (text: string) => {
      const { requestId: _r, timing: _t, ...rest } = JSON.parse(text) as Record<string, unknown>;
      return rest;
    };
    expect(strip(r.stdout)).toEqual(strip(overHttp.stdout));
    expect(strip(r.stdout)).toMatchObject({ outcome: 'found' });
    expect(stats()['POST /person/enrichment']).toBe(submits);
    expect((stats()['POST /mcp'] ?? 0) - toolCalls).toBeGreaterThanOrEqual(2);
  });

  it('--no-wait --id=<key> prints the workflow id (the key hashed, after --id-prefix) and returns', async () => {
    // Callers pass personal values as keys: only a hash of it may reach the workflow id.
    const key = `${known.email}#${runId}`;
    const r = await pcds(
      'call',
      'person_enrichment',
      '--email',
      known.email,
      `--id=${key}`,
      '--id-prefix=nowait',
      '--no-wait',
    );
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { workflowId: string };
    expect(out.workflowId).toMatch(/^call-person_enrichment-nowait-k[0-9a-f]{32}$/);
    expect(out.workflowId).toBe(callWorkflowId('person_enrichment', key, 'nowait'));
    expect(r.stdout + r.stderr).not.toContain(known.email);
    const result = (await shared.cli.client.workflow.getHandle(out.workflowId).result()) as {
      outcome: string;
    };
    expect(result.outcome).toBe('found');
  });

  it('a repeated call is answered by the result cache (cached, fetchedAt, no submit); --refresh and --max-age 0 send again', async () => {
    const email = `nobody.cache-${runId}@unknown.pcds.dev`;
    const submits = () => shared.cli.emulator.stats().requests['POST /person/enrichment'] ?? 0;
    const before = submits();
    const first = await pcds('call', 'person_enrichment', '--email', email);
    expect(first.code, first.stderr).toBe(0);
    const second = await pcds('call', 'person_enrichment', '--email', email);
    expect(second.code, second.stderr).toBe(0);
    const firstOut = JSON.parse(first.stdout) as { requestId: string };
    expect(JSON.parse(second.stdout)).toEqual({
      outcome: 'empty',
      requestId: firstOut.requestId,
      status: 'completed',
      cached: true,
      fetchedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(submits() - before).toBe(1);
    for (const flags of [['--refresh'], ['--max-age', '0']]) {
      const r = await pcds('call', 'person_enrichment', '--email', email, ...flags);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).not.toHaveProperty('cached');
    }
    expect(submits() - before).toBe(3);
  });

  it('refuses --no-cache with --refresh before anything starts (exit 2)', async () => {
    const r = await pcds(
      'call',
      'person_enrichment',
      '--email',
      known.email,
      '--no-cache',
      '--refresh',
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--no-cache and --refresh/);
    expect(r.stderr).not.toMatch(STACK_FRAME);
  });

  it('a failed call exits 1 with the failure code and no stack', async () => {
    const r = await pcds('call', 'person_enrichment', '--email', known.email, '--key-id', 'nokey');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: unknown_key: /m);
    expect(r.stderr).not.toMatch(STACK_FRAME);
  });
});

describe('usage', () => {
  it('pcds usage prints the usage fields of GET /usage', async () => {
    const r = await pcds('usage');
    expect(r.code, r.stderr).toBe(0);
    const u = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(u).toEqual(
      expect.objectContaining({
        month: expect.any(Number),
        year: expect.any(Number),
        period: expect.stringMatching(/^\d{4}-\d{2}$/),
        credits_used: {
          total: expect.any(Number),
          search: expect.any(Number),
          enrichment: expect.any(Number),
        },
        requests_count: expect.objectContaining({ total: expect.any(Number) }),
        limits: expect.objectContaining({
          monthly_allocation: expect.any(Number),
          available_credits: expect.any(Number),
          is_unlimited: expect.any(Boolean),
        }),
        breakdown: expect.objectContaining({ total_credits_consumed: expect.any(Number) }),
      }),
    );
    // The found enrichments of this file were charged to the dev key.
    expect((u.credits_used as { enrichment: number }).enrichment).toBeGreaterThanOrEqual(1);
  });

  it('refuses a month out of range with exit 2', async () => {
    const r = await pcds('usage', '--month', '13');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/month must be an integer from 1 to 12/);
  });

  it('a wrong secret is a clear error that does not echo the secret', async () => {
    const wrong = 'wrong-secret-for-cli-test-0123456789';
    const r = await runCli(['usage'], { ...shared.cli.env, PCDS_API_SECRET: wrong });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: invalid_api_secret/m);
    expect(r.stdout + r.stderr).not.toContain(wrong);
    expect(r.stderr).not.toMatch(STACK_FRAME);
  });
});

describe('mcp-login', () => {
  it('signs in headless against the emulator and keeps the grant sealed for the workers', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'pcds-cli-mcp-login-'));
    const env = { ...shared.cli.env, PCDS_DATA_DIR: dataDir };
    const r = await runCli(['mcp-login'], env, outputs);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { keyId: string; scope: string; tokensFile: string };
    expect(out).toEqual({
      keyId: 'default',
      scope: 'svc.read svc.search svc.answer',
      tokensFile: join(dataDir, 'mcp-tokens.enc'),
    });
    expect(r.stdout + r.stderr).not.toMatch(/mcp_(at|rt)_/);
    const content = await mcpTokenFile(loadConfig(env)).read();
    expect(content.grants.default.accessToken).toMatch(/^mcp_at_/);
    expect(readFileSync(out.tokensFile, 'utf8')).not.toContain(content.grants.default.accessToken);
  });

  it('refuses an unknown key id, naming the known ones', async () => {
    const r = await pcds('mcp-login', '--key-id', 'nokey');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no key with id "nokey" is configured; known ids: default/);
  });
});

describe('output hygiene', () => {
  it('no output of this file shows the API secret, and expected errors show no stack', () => {
    expect(outputs.length).toBeGreaterThan(10);
    for (const r of outputs) {
      expect(r.stdout + r.stderr).not.toContain(shared.cli.env.PCDS_API_SECRET);
      expect(r.stdout + r.stderr).not.toContain(shared.cli.env.PCDS_API_KEY);
      expect(r.stderr).not.toMatch(STACK_FRAME);
    }
  });
});
