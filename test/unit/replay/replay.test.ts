// Replays every recorded history (test/replay/histories, written by scripts/record-histories.ts)
// against the current workflow code, so a change that would break running workflows fails here
// and names the history; batches started before the store (test/replay/retired) are refused.
// The last tests prove the guard bites: an edited history, and a workflow changed by one command,
// both fail with a determinism error; the same change behind patched() passes.
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
/** Batches started before the store, kept to prove this release refuses them (they do not replay). */
const RETIRED_DIR = join(projectRoot(), 'test', 'replay', 'retired');
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

/** Every `.json` under a folder; an older baseline kept in a subfolder replays too. */
function loadHistories(dir: string): Recorded[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => {
      const json = readFileSync(join(dir, file), 'utf8');
      return { name: file.slice(0, -'.json'.length), json, history: historyFromJSON(json) };
    });
}

const recorded = loadHistories(HISTORIES_DIR);
const retired = loadHistories(RETIRED_DIR);
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
    // A type registered only to refuse what it ran before (batches of the file mode) has a
    // retired history instead.
    const types = [...new Set([...recorded, ...retired].map((r) => workflowTypeOf(r.history)))];
    expect(types.sort()).toEqual(registered);
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

/**
 * The message of the failure a workflow task ended with: the project's failure converter encodes
 * it (failures carry no message in clear), and the replay error shows the start of its encoding.
 */
function encodedFailureMessage(err: unknown): string {
  const encoded = /encoded_attributes: Some\(\[([A-Za-z0-9+/]+=*)/.exec(String(err));
  return encoded ? Buffer.from(encoded[1], 'base64').toString('utf8') : '';
}

describe('batches started before the store', () => {
  it('are refused with their code, whatever the name of their type: a task failure, not a determinism error', async () => {
    expect(retired.map((r) => workflowTypeOf(r.history)).sort()).toEqual([
      'batchWorkflow',
      'pcdsBatch',
    ]);
    for (const { name, history } of retired) {
      const failed = await Worker.runReplayHistory({ workflowBundle: current }, history, name).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failed, name).toBeDefined();
      expect(failed, name).not.toBeInstanceOf(DeterminismViolationError);
      expect(encodedFailureMessage(failed), name).toMatch(/^{"message":"batch_before_store: /);
    }
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
