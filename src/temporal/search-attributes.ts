// The project's custom search attributes: typed keys for workflows and clients, the dev-server
// flags that pre-register them, and registration on a server someone else runs.
// Workflow code may import this module: its only runtime import is @temporalio/common.
import type { Connection } from '@temporalio/client';
import {
  defineSearchAttributeKey,
  SearchAttributeType,
  type SearchAttributePair,
} from '@temporalio/common';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes.js';

/** Endpoint path of the call, e.g. "/person/enrich". */
export const PcdsEndpoint = defineSearchAttributeKey('PcdsEndpoint', SearchAttributeType.KEYWORD);
/** Terminal classification of a call: succeeded, empty, failed. */
export const PcdsOutcome = defineSearchAttributeKey('PcdsOutcome', SearchAttributeType.KEYWORD);
/** Batch a call belongs to. */
export const PcdsBatchId = defineSearchAttributeKey('PcdsBatchId', SearchAttributeType.KEYWORD);
/** Identifier (never the secret) of the API key whose quota the call uses. */
export const PcdsKeyId = defineSearchAttributeKey('PcdsKeyId', SearchAttributeType.KEYWORD);
/** What the workflow is doing now: throttled, polling, awaiting-webhook, paused, ... */
export const PcdsState = defineSearchAttributeKey('PcdsState', SearchAttributeType.KEYWORD);
/** Input row index of a batch item. */
export const PcdsRowIndex = defineSearchAttributeKey('PcdsRowIndex', SearchAttributeType.INT);
/** A batch's rows that have their output line (found, empty, failed or skipped). */
export const PcdsRowsDone = defineSearchAttributeKey('PcdsRowsDone', SearchAttributeType.INT);
/** A batch's rows whose line is failed (invalid input rows included). */
export const PcdsRowsFailed = defineSearchAttributeKey('PcdsRowsFailed', SearchAttributeType.INT);

/**
 * What a call shows before its first change of phase (PcdsState submitting, PcdsOutcome running,
 * its key when named): its start carries them, so the call need not upsert them
 * (CallInput.startedShowing).
 */
export function firstPhaseAttributes(keyId?: string): SearchAttributePair[] {
  return [
    { key: PcdsOutcome, value: 'running' },
    { key: PcdsState, value: 'submitting' },
    ...(keyId ? [{ key: PcdsKeyId, value: keyId }] : []),
  ];
}

export const PCDS_SEARCH_ATTRIBUTES = [
  PcdsEndpoint,
  PcdsOutcome,
  PcdsBatchId,
  PcdsKeyId,
  PcdsState,
  PcdsRowIndex,
  PcdsRowsDone,
  PcdsRowsFailed,
] as const;

// The spelling `temporal server start-dev --search-attribute Name=Type` accepts.
const CLI_TYPE_NAMES: Record<SearchAttributeType, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** `Name=Type` values for `temporal server start-dev --search-attribute`. */
export function searchAttributeCliArgs(): string[] {
  return PCDS_SEARCH_ATTRIBUTES.map((key) => `${key.name}=${CLI_TYPE_NAMES[key.type]}`);
}

/**
 * Registers the attributes on a running server (e.g. the docker compose stack) so workers can
 * start against it. Idempotent: attributes already present with the same type are left alone.
 * An attribute present with another type is an error, since the server would keep the old type.
 */
export async function registerSearchAttributes(
  connection: Pick<Connection, 'operatorService'>,
  namespace: string,
): Promise<{ added: string[] }> {
  const missing = await missingSearchAttributes(connection, namespace);
  const added = Object.keys(missing);
  if (added.length === 0) return { added };
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: missing,
    });
  } catch (err) {
    // A worker starting at the same moment may have added them first (the server then answers
    // "already exists" or a race error): success if they are all there now.
    const stillMissing = Object.keys(await missingSearchAttributes(connection, namespace));
    if (stillMissing.length > 0) throw err;
  }
  return { added };
}

async function missingSearchAttributes(
  connection: Pick<Connection, 'operatorService'>,
  namespace: string,
): Promise<Record<string, number>> {
  const existing = await connection.operatorService.listSearchAttributes({
    namespace,
  });
  const known: Record<string, number> = {
    ...existing.systemAttributes,
    ...existing.customAttributes,
  };
  const missing: Record<string, number> = {};
  const conflicts: string[] = [];
  for (const key of PCDS_SEARCH_ATTRIBUTES) {
    const wanted = encodeSearchAttributeIndexedValueType(key.type) as number;
    const current = known[key.name];
    if (current === undefined) missing[key.name] = wanted;
    else if (current !== wanted) {
      conflicts.push(`${key.name} (wanted ${key.type}, found type #${current})`);
    }
  }
  if (conflicts.length > 0) {
    throw new Error(
      `Search attributes exist with another type in namespace ${namespace}: ${conflicts.join(', ')}. ` +
        'Remove them (temporal operator search-attribute remove) and start the worker again.',
    );
  }
  return missing;
}
