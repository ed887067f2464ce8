// `pcds batch start|status` run as child processes against the emulator and a worker: bad
// launches are refused before anything runs, and a detached batch ends with one line per row.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { runCli, sharedCliEnv, STACK_FRAME, tempDir } from './cli-env.js';

const shared = sharedCliEnv();
const { pcds, outputs } = shared;
const dir = tempDir('batch');

const runId = `${process.pid}-${Date.now().toString(36)}`;

it('refuses a missing input file, unknown columns (by position, never quoting a header cell), an unknown endpoint and a bad row limit, starting nothing', async () => {
  const good = join(dir, 'good.csv');
  writeFileSync(good, 'email\nsomeone@example.com\n');
  const extraColumn = join(dir, 'extra-column.csv');
  // Header cells are file content: the refusal names their positions, never the cells.
  const secretCells = ['AKIAIOSFODNN7EXAMPLE', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'];
  writeFileSync(extraColumn, `email,${secretCells.join(',')}\nsomeone@example.com,a,b\n`);
  const missing = join(dir, 'missing.csv');
  const out = (n: string) => join(dir, `${n}.jsonl`);
  const ids = ['missing', 'column', 'endpoint', 'row-limit'].map((n) => `refused-${n}-${runId}`);
  const [noFile, badColumn, badEndpoint, badRowLimit] = await Promise.all([
    pcds('batch', 'start', '--id', ids[0], '-i', missing, '-o', out('a'), '--detach'),
    pcds('batch', 'start', '--id', ids[1], '-i', extraColumn, '-o', out('b'), '--detach'),
    pcds('batch', 'start', '--id', ids[2], '-e', 'no_such_endpoint', '-i', good, '-o', out('c')),
    pcds('batch', 'start', '--id', ids[3], '--max-row-bytes', '300000', '-i', good, '-o', out('d')),
  ]);
  expect(noFile.code).toBe(2);
  expect(noFile.stderr).toMatch(`error: cannot read the input file ${missing}: no such file`);
  expect(badColumn.code).toBe(2);
  expect(badColumn.stderr).toMatch(
    /^error: column 2 and column 3 are not parameters of person_enrichment .*map them with --map parameter=column or drop them with --ignore/,
  );
  for (const cell of secretCells) expect(badColumn.stderr).not.toContain(cell);
  expect(badEndpoint.code).toBe(2);
  expect(badEndpoint.stderr).toMatch(/^error: unknown endpoint "no_such_endpoint"/);
  expect(badRowLimit.code).toBe(2);
  expect(badRowLimit.stderr).toMatch(/--max-row-bytes must be an integer from 1 to 262144/);
  for (const r of [noFile, badColumn, badEndpoint, badRowLimit]) {
    expect(r.stdout).toBe('');
    expect(r.stderr).not.toMatch(STACK_FRAME);
  }
  for (const id of ids) {
    await expect(
      shared.cli.client.workflow.getHandle(`batch-${id}`).describe(),
    ).rejects.toBeInstanceOf(WorkflowNotFoundError);
  }
  for (const n of ['a', 'b', 'c', 'd']) expect(existsSync(out(n))).toBe(false);
  expect(shared.cli.emulator.stats().jobsSubmitted).toBe(0);
});

it('--dry-run prints the plan with the hours the limits imply and starts nothing, writing no file', async () => {
  // 2,500 distinct rows, 499 that repeat one of them, 1 malformed: 2,500 sent, 5,000 requests.
  const lines = ['email'];
  for (let i = 0; i < 2500; i++) lines.push(`person${i}@example.com`);
  for (let i = 0; i < 499; i++) lines.push(`Person${i}@Example.com`);
  lines.push('not-an-email');
  const input = join(dir, 'plan.csv');
  writeFileSync(input, lines.join('\n') + '\n');
  const kept = join(dir, 'plan-kept.jsonl');
  writeFileSync(kept, '{"row":1}\n');
  const fresh = join(dir, 'plan-fresh.csv');
  const id = `dry-run-${runId}`;
  const env = { ...shared.cli.env, PCDS_RATE_PER_MINUTE: '100', PCDS_RATE_PER_HOUR: '1000' };
  const [overwrite, csv] = await Promise.all([
    runCli(
      ['batch', 'start', '--id', id, '-i', input, '-o', kept, '--overwrite', '--dry-run'],
      env,
    ),
    runCli(['batch', 'start', '--id', id, '-i', input, '-o', fresh, '--dry-run'], env, outputs),
  ]);
  for (const r of [overwrite, csv]) {
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^plan: 3000 rows \(499 duplicates, 1 invalid: not sent\), 2500 sent x ~2 requests .* = 5000 requests$/m,
    );
    // 1,000 requests in the first ten minutes of each hour: four hours, then ten minutes.
    expect(r.stdout).toMatch(/^ {2}1 key \(100\/min, 1000\/h each\): about 4h10m at the limits$/m);
    // The credit check: the rows sent at the endpoint's typical price, and the account's credits.
    expect(r.stdout).toMatch(/^ {2}estimated cost: up to 2500 credits .*; available credits: \d+/m);
    expect(r.stdout).toMatch(
      /^ {2}shorter: one more key .*about 2h05m; --webhooks .*about 2h05m$/m,
    );
    expect(r.stdout).toMatch(/^dry run: nothing started/m);
  }
  await expect(
    shared.cli.client.workflow.getHandle(`batch-${id}`).describe(),
  ).rejects.toBeInstanceOf(WorkflowNotFoundError);
  expect(readFileSync(kept, 'utf8')).toBe('{"row":1}\n');
  for (const f of [fresh, `${fresh}.jsonl`]) expect(existsSync(f)).toBe(false);
  expect(shared.cli.emulator.stats().jobsSubmitted).toBe(0);
});

it(
  'a detached batch of 10 rows, one malformed, ends with exactly one line per row',
  { timeout: 150_000 },
  async () => {
    const emails = sampleRows({ rows: 9 }).map((r) => r.email);
    const badRow = 5;
    emails.splice(badRow - 1, 0, 'not-an-email');
    const input = join(dir, 'ten.csv');
    writeFileSync(input, ['email', ...emails].join('\n') + '\n');
    const output = join(dir, 'ten.jsonl');
    const id = `cli-ten-${runId}`;

    // Sent, not answered by the result cache: the job duration is learned from the rows' jobs.
    const started = await pcds(
      'batch',
      'start',
      '--id',
      id,
      '-i',
      input,
      '-o',
      output,
      '--detach',
      '--no-cache',
    );
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toBe(`batch ${id}\n`);
    expect(started.stderr).toMatch(/^10 rows of .*ten\.csv -> .*ten\.jsonl$/m);

    type Status = { state: string; total: number; done: number; found: number; failed: number };
    let status: Status | undefined;
    for (let attempt = 0; attempt < 15; attempt++) {
      const r = await pcds('batch', 'status', id, '--json');
      expect(r.code, r.stderr).toBe(0);
      status = JSON.parse(r.stdout) as Status;
      if (status.state === 'done') break;
    }
    expect(status).toMatchObject({ state: 'done', total: 10, done: 10, found: 9, failed: 1 });
    // The summary of a finished batch carries what docs/batches.md promises: the learned job
    // duration (9 rows found, more than the 5 it needs) and the requests per found row.
    const json = status as Status & { jobMsEstimate?: number; requestsPerRow?: number };
    expect(json.jobMsEstimate).toBeGreaterThan(0);
    expect(json.requestsPerRow).toBeGreaterThanOrEqual(2);
    const text = await pcds('batch', 'status', id);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(
      `  ${json.requestsPerRow} requests per found/empty row; job duration estimate ${json.jobMsEstimate} ms\n`,
    );

    // Detached: the output is written by a watch, where the CLI runs.
    expect((await pcds('batch', 'watch', id)).code).toBe(0);
    const lines = readFileSync(output, 'utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(10);
    const rows = lines.map(
      (l) =>
        JSON.parse(l) as {
          row: number;
          key: { email: string };
          outcome: string;
          code?: string;
          message?: string;
        },
    );
    expect(rows.map((r) => r.row).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for (const r of rows) {
      expect(r.key.email).toBe(emails[r.row - 1]);
      if (r.row === badRow) {
        expect(r).toMatchObject({ outcome: 'failed', code: 'invalid_row' });
        expect(r.message).toMatch(/email/);
        expect(r.message).not.toContain('not-an-email');
      } else expect(r.outcome).toBe('found');
    }
    expect(existsSync(`${output}.summary.json`)).toBe(true);
    expect(shared.cli.emulator.stats().jobsSubmitted).toBe(9);
  },
);

it(
  'a credit budget stops a batch; status shows the spend and lists failed rows; resume with a higher budget runs the skipped rows',
  { timeout: 150_000 },
  async () => {
    const [a, b, c, d] = sampleRows({ rows: 4 }).map((r) => r.email);
    // Row 3 is malformed, row 4 repeats row 1 (in capitals), rows 5 and 6 are new people.
    const emails = [a, b, 'not-an-email', a.toUpperCase(), c, d];
    const input = join(dir, 'budget.csv');
    writeFileSync(input, ['email', ...emails].join('\n') + '\n');
    const output = join(dir, 'budget.jsonl');
    const id = `cli-budget-${runId}`;
    const submitsBefore = shared.cli.emulator.stats().jobsSubmitted;

    const waitDone = async () => {
      for (let attempt = 0; attempt < 30; attempt++) {
        const r = await pcds('batch', 'status', id, '--json');
        expect(r.code, r.stderr).toBe(0);
        const status = JSON.parse(r.stdout) as { state: string };
        if (status.state === 'done') return status;
      }
      throw new Error('the batch did not end');
    };
    const started = await pcds(
      'batch',
      'start',
      '--id',
      id,
      '-i',
      input,
      '-o',
      output,
      '--max-credits',
      '2',
      '--detach',
      // Sent, so charged: the budget is what stops the batch.
      '--no-cache',
    );
    expect(started.code, started.stderr).toBe(0);
    expect(await waitDone()).toMatchObject({
      done: 6,
      found: 3,
      failed: 1,
      skipped: 2,
      duplicates: 1,
      credits: 2,
      maxCredits: 2,
    });
    expect(shared.cli.emulator.stats().jobsSubmitted - submitsBefore).toBe(2);

    const text = await pcds('batch', 'status', id);
    expect(text.stdout).toContain(
      'credits 2 of 2, 2 skipped (credit_budget), 1 duplicates not sent',
    );
    expect(text.stdout).toContain(`pcds batch resume ${id} --max-credits <more>`);
    const failed = await pcds('batch', 'status', id, '--failed');
    // Each failed row with its code and reason, never the value that failed.
    expect(failed.stdout).toBe('row 3 invalid_row: email must be an email address\n');
    expect(failed.stdout).not.toContain('not-an-email');

    const lower = await pcds('batch', 'resume', id, '--max-credits', '2');
    expect(lower.code).toBe(2);
    expect(lower.stderr).toMatch(/give a higher --max-credits/);
    const resumed = await pcds('batch', 'resume', id, '--max-credits', '10');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/runs again with a budget of 10 credits/);
    expect(await waitDone()).toMatchObject({ done: 6, found: 5, failed: 1, credits: 4 });
    expect(shared.cli.emulator.stats().jobsSubmitted - submitsBefore).toBe(4);
    // A watch writes the detached batch's output, where the CLI runs.
    expect((await pcds('batch', 'watch', id)).code).toBe(0);
    const lines = readFileSync(output, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { row: number; outcome: string; duplicateOf?: number });
    expect(lines.map((l) => l.row).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(lines.find((l) => l.row === 4)).toMatchObject({ outcome: 'found', duplicateOf: 1 });
    expect(lines.filter((l) => l.outcome === 'skipped')).toEqual([]);
  },
);

it('pcds batch status of an unknown id is a clear error', async () => {
  const r = await pcds('batch', 'status', `no-such-batch-${runId}`, '--json');
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toBe(
    `error: no batch with id no-such-batch-${runId} (workflow batch-no-such-batch-${runId})\n`,
  );
});

it('--tenant starts a batch under the tenant’s own id, with its --weight; the tenant names it by its id, the operator by the scoped one; a bad --tenant or --weight is refused with the rule', async () => {
  const input = join(dir, 'tenant.csv');
  const emails = sampleRows({ rows: 2 }).map((r) => r.email);
  writeFileSync(input, `email\n${emails.join('\n')}\n`);
  const tenant = `alice-${runId}`;
  const id = `f2-${runId}`;
  const started = await pcds(
    'batch',
    'start',
    '--tenant',
    tenant,
    '--weight',
    '2',
    '--id',
    id,
    '-i',
    input,
    '-o',
    join(dir, 'tenant.jsonl'),
    '--no-estimate',
  );
  expect(started.code, started.stderr).toBe(0);
  expect(started.stdout).toBe(`batch ${tenant}.${id}\n`);
  const described = await shared.cli.client.workflow.getHandle(`batch-${tenant}.${id}`).describe();
  expect(described.raw.workflowExecutionInfo?.priority).toMatchObject({ fairnessWeight: 2 });

  const own = await pcds('batch', 'status', id, '--tenant', tenant, '--json');
  expect(own.code, own.stderr).toBe(0);
  expect(JSON.parse(own.stdout)).toMatchObject({
    state: 'done',
    total: 2,
    batchId: `${tenant}.${id}`,
  });
  const operator = await pcds('batch', 'status', `${tenant}.${id}`, '--json');
  expect(operator.code).toBe(0);
  // The operator's own `f2` is another batch (none here); another tenant cannot name Alice's.
  expect((await pcds('batch', 'status', id)).code).toBe(2);
  const bob = await pcds('batch', 'status', `${tenant}.${id}`, '--tenant', `bob-${runId}`);
  expect(bob.code).toBe(2);
  expect(bob.stderr).toMatch(/not a batch id of tenant bob-/);

  for (const [flag, value, rule] of [
    ['--tenant', 'no/such tenant', /a tenant id is 1-64 letters, digits/],
    ['--weight', '0', /a weight is a number from 0.001 to 1000/],
  ] as const) {
    const r = await pcds('batch', 'start', flag, value, '-i', input, '-o', join(dir, 'x.jsonl'));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(rule);
  }
});

it('no output of this file shows the API key or secret', () => {
  expect(outputs.length).toBeGreaterThanOrEqual(6);
  for (const r of outputs) {
    expect(r.stdout + r.stderr).not.toContain(shared.cli.env.PCDS_API_SECRET);
    expect(r.stdout + r.stderr).not.toContain(shared.cli.env.PCDS_API_KEY);
    expect(r.stderr).not.toMatch(STACK_FRAME);
  }
});
