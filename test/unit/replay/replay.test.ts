// Replays every recorded history (test/replay/histories, written by scripts/record-histories.ts)
// against the current workflow code, so a change that would break running workflows fails here
// and names the history. The last tests prove the guard bites: an edited history, and a workflow
// changed by one command, both fail with a determinism error; the same change behind patched()
// passes.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { beforeAll, describe, expect, it } from 'vitest';
import { devCredentials } from '../../../src/emulator/index.js';
import { projectRoot } from '../../../src/temporal/cli-binary.js';
import { dataConverterFromEnv } from '../../../src/temporal/data-converter.js';
import * as workflows from '../../../src/workflows/index.js';
import { DEFAULT_WORKFLOWS_PATH, workflowBundle } from '../../harness/temporal.js';
import { historyFromJSON, holdsSecret } from '../../replay/history-json.js';

const HISTORIES_DIR = join(projectRoot(), 'test', 'replay', 'histories');
const CHANGED_WORKFLOWS_PATH = join(
  projectRoot(),
  'test',
  'replay',
  'fixtures',
  'changed-workflows.ts',
);
const BUNDLE_TIMEOUT_MS = 120_000;
const replayDataConverter = dataConverterFromEnv({
  PCDS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
});

interface Recorded {
  name: string;
  json: string;
  history: History;
}

/** Every `.json` under the histories folder; an older baseline kept in a subfolder replays too. */
function loadHistories(): Recorded[] {
  return readdirSync(HISTORIES_DIR, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => {
      const json = readFileSync(join(HISTORIES_DIR, file), 'utf8');
      return { name: file.slice(0, -'.json'.length), json, history: historyFromJSON(json) };
    });
}

const recorded = loadHistories();
const historyNamed = (name: string): History => {
  const found = recorded.find((r) => r.name === name);
  if (!found) throw new Error(`no recorded history named ${name}`);
  return found.history;
};
const workflowTypeOf = (history: History) =>
  history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;

/** Replays histories on one replay worker; returns `name: error` for each that failed. */
async function replayFailures(
  bundle: WorkflowBundleOption,
  histories: Pick<Recorded, 'name' | 'history'>[],
): Promise<string[]> {
  const failures: string[] = [];
  const results = Worker.runReplayHistories(
    // Histories are recorded in clear; the codec of production workers passes them through.
    { workflowBundle: bundle, dataConverter: replayDataConverter },
    histories.map(({ name, history }) => ({ workflowId: name, history })),
  );
  for await (const result of results) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  return failures;
}

/** The negative cases fail workflow tasks on purpose: keep core's warnings about them quiet. */
function installErrorsOnlyRuntime(): void {
  try {
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } },
    });
  } catch {
    // A runtime was installed earlier in this process: keep it.
  }
}

let current: WorkflowBundleOption;
beforeAll(async () => {
  installErrorsOnlyRuntime();
  current = await workflowBundle(DEFAULT_WORKFLOWS_PATH);
}, BUNDLE_TIMEOUT_MS);

describe('replay of recorded histories', () => {
  it('has a recorded history of every workflow the worker registers', () => {
    const registered = Object.entries(workflows)
      .filter(([, value]) => typeof value === 'function')
      .map(([name]) => name)
      .sort();
    const types = [...new Set(recorded.map((r) => workflowTypeOf(r.history)))].sort();
    expect(types).toEqual(registered);
  });

  it('holds none of the emulator credentials, in clear or inside an encoded payload', () => {
    // The recorder's emulator runs with the default seed, which fixes its credentials.
    const { key, secret } = devCredentials(42);
    const payload = Buffer.from(JSON.stringify({ apiKey: key })).toString('base64');
    const planted = JSON.stringify({ events: [{ input: { payloads: [{ data: payload }] } }] });
    expect(holdsSecret(planted, [key])).toBe(true);
    const leaking = recorded.filter((r) => holdsSecret(r.json, [key, secret]));
    expect(leaking.map((r) => r.name)).toEqual([]);
  });

  it('replays every recorded history against the current workflow code', async () => {
    expect(await replayFailures(current, recorded)).toEqual([]);
  }, 60_000);
});

describe('the replay guard', () => {
  it('fails with a determinism error when a recorded command no longer matches the code', async () => {
    const edited = structuredClone(historyNamed('endpoint-call-polling'));
    const scheduled = edited.events?.find((e) => e.activityTaskScheduledEventAttributes);
    expect(scheduled?.activityTaskScheduledEventAttributes?.activityType?.name).toBe('submitCall');
    scheduled!.activityTaskScheduledEventAttributes!.activityType = { name: 'renamedSubmit' };

    const replay = Worker.runReplayHistory({ workflowBundle: current }, edited, 'edited');
    await expect(replay).rejects.toBeInstanceOf(DeterminismViolationError);
    await expect(replay).rejects.toThrow(/renamedSubmit|submitCall/);
    // Named in the failures of a run over several histories, the others unaffected.
    const failures = await replayFailures(current, [
      { name: 'endpoint-call-polling (edited)', history: edited },
      { name: 'endpoint-call-webhook', history: historyNamed('endpoint-call-webhook') },
    ]);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/^endpoint-call-polling \(edited\): /);
  }, 60_000);

  it(
    'catches a workflow changed by one command, and passes the same change behind patched()',
    async () => {
      const changed = await workflowBundle(CHANGED_WORKFLOWS_PATH);
      await expect(
        Worker.runReplayHistory(
          { workflowBundle: changed },
          historyNamed('endpoint-call-polling'),
          'changed',
        ),
      ).rejects.toBeInstanceOf(DeterminismViolationError);
      await expect(
        Worker.runReplayHistory(
          { workflowBundle: changed },
          historyNamed('person-search'),
          'patched',
        ),
      ).resolves.toBeUndefined();
    },
    BUNDLE_TIMEOUT_MS,
  );
});
