// The install on the oldest Node the project supports (package.json's engines) is free of
// EBADENGINE warnings: every package the lock file installs, runtime or tooling, declares an
// engines range that takes that Node, and the README names that Node.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../../src/temporal/cli-binary.js';

const root = projectRoot();
const readJson = <T>(path: string) => JSON.parse(readFileSync(join(root, path), 'utf8')) as T;
const project = readJson<{ engines: { node: string } }>('package.json');
const lock = readJson<{
  packages: Record<string, { version?: string; engines?: unknown; optional?: boolean }>;
}>('package-lock.json');

/** The oldest Node the project supports: the lowest version its engines range takes. */
const oldest = semver.minVersion(project.engines.node);

describe('a clean install', () => {
  it('supports a Node 20 release', () => {
    expect(oldest?.major).toBe(20);
  });

  it('installs no package whose engines exclude the oldest Node supported', () => {
    const refusing = Object.entries(lock.packages)
      .filter(([path]) => path !== '')
      .flatMap(([path, pkg]) => {
        // An engines field in the older array form is advisory and never warned about.
        const node = (pkg.engines as { node?: unknown } | undefined)?.node;
        if (typeof node !== 'string') return [];
        return semver.satisfies(oldest!, node) ? [] : [`${path}@${pkg.version} (node ${node})`];
      });
    expect(refusing).toEqual([]);
  });

  it('the README names the Node versions supported', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme).toContain(`Node ${oldest!.major}.${oldest!.minor}`);
  });
});
