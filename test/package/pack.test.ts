// The project as a service installs it: `npm pack`, the tarball installed into a scratch project,
// a small TypeScript service type-checked against the package's declarations (with lines that
// must not compile, so loose types fail the test), then run against the emulator and the shared
// Temporal dev server: one call and a 20-row batch through the package's exports only.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { tempDir } from '../batch/fixtures.js';
import {
  temporalAddress,
  testEncryptionEnv,
  testNamespace,
  uniqueTaskQueue,
} from '../harness/temporal.js';

const execFileAsync = promisify(execFile);
/** execFile that puts the command's own output into the error, so a failure says why. */
async function run(
  file: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await execFileAsync(file, args, { encoding: 'utf8', maxBuffer: 16 << 20, ...opts });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}
const root = projectRoot();
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version: string }>;
};
const lockedVersion = (name: string) => lock.packages[`node_modules/${name}`].version;

const SERVICE = `
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPcdsClient, PcdsError, PcdsUsageError, type CallSuccess } from 'pcds-orchestrator';
import { createWorker, loadConfig } from 'pcds-orchestrator/worker';
import { sampleRows, startEmulator, writeSampleCsv } from 'pcds-orchestrator/emulator';

const dir = process.argv[2]!;
const emulator = await startEmulator({ port: 0, latency: { queuedMs: 20, processingMs: 40 }, limits: { enabled: false } });
const config = loadConfig({
  PCDS_BASE_URL: emulator.url,
  PCDS_API_KEY: emulator.devKey.key,
  PCDS_API_SECRET: emulator.devKey.secret,
  PCDS_THROTTLE: 'off',
  PCDS_TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS!,
  PCDS_TEMPORAL_NAMESPACE: process.env.TEMPORAL_NAMESPACE!,
  PCDS_TASK_QUEUE: process.env.TASK_QUEUE!,
  PCDS_ENCRYPTION_KEY: process.env.PCDS_ENCRYPTION_KEY!,
});
const worker = await createWorker({ config });
const running = worker.run();
const pcds = await createPcdsClient({
  address: config.PCDS_TEMPORAL_ADDRESS,
  namespace: config.PCDS_TEMPORAL_NAMESPACE,
  taskQueue: config.PCDS_TASK_QUEUE,
});
const report: Record<string, unknown> = {};
try {
  const email = sampleRows({ rows: 1 })[0]!.email;
  const outcome = await pcds.call('person_enrichment', { email });
  report.call = outcome.outcome;
  // A found call's result is the endpoint's: a person profile.
  if (outcome.outcome === 'found') report.profileEmails = [outcome.result.best_business_email, ...(outcome.result.altemails ?? [])].includes(email);
  const anyOutcome: CallSuccess = outcome;
  void anyOutcome;
  // An email with spaces around it is the email: sent trimmed.
  report.trimmed = (await pcds.call('person_enrichment', { email: \` \${email}\t\` }, { cache: false })).outcome;

  try {
    await pcds.call('person_enrichment', { email: 'not an email' });
  } catch (err) {
    report.badInput = err instanceof PcdsUsageError && err instanceof PcdsError ? err.code : String(err);
  }

  const leads = join(dir, 'leads.csv');
  await writeSampleCsv(leads, { rows: 20, unknownShare: 0.2 });
  const batch = await pcds.startBatch({ input: leads, output: join(dir, 'out', 'leads.jsonl'), window: 5 });
  const status = await batch.status();
  report.batchStatusKind = status.ended ? 'summary' : 'progress';
  const summary = await batch.result();
  report.batch = { state: summary.state, done: summary.done, found: summary.found, empty: summary.empty };
  report.lines = readFileSync(join(dir, 'out', 'leads.jsonl'), 'utf8').split('\\n').filter(Boolean).length;

  // @ts-expect-error an unknown option is a type error
  await pcds.call('person_enrichment', { email }, { noSuchOption: true }).catch(() => undefined);
  // @ts-expect-error a call's outcome is typed: no such field
  void outcome.noSuchField;
  // @ts-expect-error a misspelt endpoint is a type error
  await pcds.call('person_enrichmentx', { email }).catch(() => undefined);
  // @ts-expect-error a misspelt parameter is a type error
  await pcds.call('person_enrichment', { emali: email }).catch(() => undefined);
  if (outcome.outcome === 'found') {
    // @ts-expect-error a result field the profile does not have
    void outcome.result.best_busines_email;
  }
  for await (const line of batch.results({ limit: 1 })) {
    // @ts-expect-error a batch's results are its endpoint's: no such field
    void line.result?.best_busines_email;
  }
} finally {
  await pcds.close();
  worker.shutdown();
  await running;
  await emulator.stop();
}
writeFileSync(join(dir, 'report.json'), JSON.stringify(report));
`;

describe('the packed package, installed into a service', () => {
  it('installs from the tarball, type-checks a service and runs a call and a batch', async () => {
    const dir = tempDir('pack');
    const { stdout } = await run(
      'npm',
      ['pack', '--json', '--ignore-scripts', '--pack-destination', dir],
      { cwd: root },
    );
    const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    const paths = packed.files.map((f) => f.path);
    // Compiled code and declarations ship; sources, tests and build state do not.
    expect(paths).toContain('dist/index.js');
    expect(paths).toContain('dist/index.d.ts');
    expect(paths).toContain('dist/workflows/index.js');
    expect(paths).toContain('bin/pcds.mjs');
    // The README ships with the pages it links, so its links work in an installed package.
    expect(paths).toContain('README.md');
    expect(paths).toContain('docs/configuration.md');
    expect(
      paths.filter((p) => /^(src|test|bench)\//.test(p) || p.endsWith('.tsbuildinfo')),
    ).toEqual([]);

    const app = join(dir, 'service');
    mkdirSync(join(app, 'src'), { recursive: true });
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({
        name: 'a-service',
        private: true,
        type: 'module',
        dependencies: { 'pcds-orchestrator': `file:${join(dir, packed.filename)}` },
        devDependencies: {
          typescript: lockedVersion('typescript'),
          '@types/node': lockedVersion('@types/node'),
        },
      }),
    );
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          types: ['node'],
          // As `tsc --init` sets it: @temporalio/common's own declarations import 'ms' untyped.
          skipLibCheck: true,
          outDir: 'dist',
          rootDir: 'src',
        },
        include: ['src'],
      }),
    );
    writeFileSync(join(app, 'src', 'service.ts'), SERVICE);
    // The cache that the project's install filled serves every package: no network is needed.
    const installed = await run(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'],
      {
        cwd: app,
      },
    );
    // Every package's declared engines take this Node: no warning for a service to interpret.
    expect(installed.stderr).not.toMatch(/EBADENGINE/);
    // The one install script a service needs: the embedded store's native module. Its install
    // (prebuild-install, else a build from source) finds the prebuilt binary in a local folder:
    // the one the project's install made, same version, same Node, packed as a release's
    // asset is. Without it, SQLite would be compiled from source once more (minutes on two cores).
    // prebuild-install loads the unpacked binary before it reports success, and the service
    // below runs on it.
    const sqliteDir = join(root, 'node_modules', 'better-sqlite3');
    const sqlite = JSON.parse(readFileSync(join(sqliteDir, 'package.json'), 'utf8')) as {
      version: string;
    };
    const prebuilds = join(dir, 'prebuilds');
    mkdirSync(prebuilds);
    const asset = `better-sqlite3-v${sqlite.version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
    await run('tar', [
      '-czf',
      join(prebuilds, asset),
      '-C',
      sqliteDir,
      'build/Release/better_sqlite3.node',
    ]);
    await run('npm', ['rebuild', 'better-sqlite3', '--prefer-offline'], {
      cwd: app,
      env: { ...process.env, npm_config_better_sqlite3_local_prebuilds: prebuilds },
    });
    // tsc fails on a type error, and on an @ts-expect-error line that has none (loose types).
    await run(join(app, 'node_modules', '.bin', 'tsc'), ['-p', '.'], { cwd: app });

    // The package's bin runs compiled code, without tsx.
    const help = await run(join(app, 'node_modules', '.bin', 'pcds'), ['--help'], { cwd: app });
    expect(help.stdout).toContain('Usage: pcds');

    await run(process.execPath, [join(app, 'dist', 'service.js'), app], {
      cwd: app,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TEMPORAL_ADDRESS: temporalAddress(),
        TEMPORAL_NAMESPACE: testNamespace(),
        TASK_QUEUE: uniqueTaskQueue('pack'),
        ...testEncryptionEnv(),
      },
      timeout: 120_000,
    });
    const report = JSON.parse(readFileSync(join(app, 'report.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(report.call).toBe('found');
    expect(report.profileEmails).toBe(true);
    expect(report.trimmed).toBe('found');
    expect(report.badInput).toBe('invalid_params');
    expect(report.batch).toEqual({ state: 'done', done: 20, found: 16, empty: 4 });
    expect(report.lines).toBe(20);
  }, 300_000);
});
