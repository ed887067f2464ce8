// A workflow bundle file (PCDS_WORKFLOW_BUNDLE) is checked before a worker loads it: a file that is
// missing, not a bundle, damaged, or written by another release or encryption setting is refused
// with the reason, and nothing of the file's content is repeated.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config-error.js';
import { FAILURE_CONVERTER_PATH } from '../../../src/temporal/data-converter.js';
import { packageVersion } from '../../../src/version.js';
import { workflowBundleFile } from '../../../src/worker/bundle.js';

const dir = mkdtempSync(join(tmpdir(), 'pcds-bundle-'));
const encrypted = { failureConverterPath: FAILURE_CONVERTER_PATH };
const MARK = '// pcds-orchestrator workflow bundle: ';

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function refusal(path: string, dataConverter = encrypted): ConfigError {
  try {
    workflowBundleFile(path, dataConverter);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('the bundle was accepted');
}

describe('PCDS_WORKFLOW_BUNDLE', () => {
  it("takes a bundle stamped with this release and the worker's failure encoding", () => {
    const release = packageVersion();
    const enc = file('enc.js', `${MARK}release ${release}, failures encoded\nvar x;\n`);
    expect(workflowBundleFile(enc, encrypted)).toEqual({ codePath: enc });
    const plain = file('plain.js', `${MARK}release ${release}, failures plain\nvar x;\n`);
    expect(workflowBundleFile(plain, {})).toEqual({ codePath: plain });
  });

  it('refuses a bundle of the other encryption setting or another release, naming both', () => {
    const release = packageVersion();
    const plain = file('plain2.js', `${MARK}release ${release}, failures plain\n`);
    expect(refusal(plain).message).toContain(
      `failures plain, this worker needs release ${release} with failures encoded`,
    );
    const old = file('old.js', `${MARK}release 0.0.1-old, failures encoded\n`);
    expect(refusal(old).message).toMatch(
      /written for release 0\.0\.1-old.*pcds worker --write-bundle/,
    );
  });

  it('refuses a missing file, a file that is no bundle and a damaged stamp, repeating nothing of them', () => {
    expect(refusal(join(dir, 'absent.js')).message).toBe(
      'PCDS_WORKFLOW_BUNDLE: cannot read the file (ENOENT)',
    );
    const secret = 'ada.lovelace@example.com,+44 20 7946 0000';
    const notBundle = refusal(file('leads.csv', `email,phone\n${secret}\n`)).message;
    expect(notBundle).toContain('not a workflow bundle');
    const damaged = refusal(file('damaged.js', `${MARK}release ${secret}\n`)).message;
    expect(damaged).toContain('first line is damaged');
    for (const message of [notBundle, damaged]) {
      expect(message).not.toContain('ada.lovelace');
      expect(message).not.toContain('7946');
    }
  });
});
