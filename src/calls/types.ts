// Inputs and outcomes of a call's workflow, shared by workflows, activities, the batch's rules,
// the client and the CLI. They carry no secret: a key is named by its non-secret id and resolved
// inside activities. Pure types: workflow code imports this file.

import type { Requester, SearchPageInfo, Transport } from '../contract/index.js';
import type { CacheUse } from './cache-policy.js';

export interface CallInput {
  /** Catalogue name, e.g. person_enrichment. */
  endpoint: string;
  /** Validated parameters (may hold PII: payloads are encrypted by the codec). */
  params: Record<string, unknown>;
  /** Id of the configured key to use; the worker's first key when omitted. */
  keyId?: string;
  /**
   * How the job is submitted and polled: the HTTP API (default), or the MCP endpoint's tool and
   * check_status. Kept in the input, so the choice is durable and visible.
   */
  transport?: Transport;
  /** Wait for a webhook delivery, polling only as a slow fallback. */
  webhook?: boolean;
  /** Webhook mode: poll this often while no delivery arrives (default 60 s; PCDS_WEBHOOK_FALLBACK_POLL_MS). */
  webhookFallbackPollMs?: number;
  pollIntervalMs?: number;
  /** Wait this long before the first poll instead of pollIntervalMs (a batch's learned job duration). */
  firstPollDelayMs?: number;
  /** Give up (poll_timeout) after this long without a terminal status. */
  maxWaitMs?: number;
  /**
   * How the call uses the result cache. Absent: not at all (calls started before it, and a
   * batch's rows, which the batch answers from the cache itself).
   */
  cache?: CacheUse;
  /** Set when the call is a row of a batch. */
  batchId?: string;
  rowIndex?: number;
  /**
   * Who asks, for the shared throttle: the tenant and class of the call (a batch's row: its
   * batch). Absent from calls started before requesters: see callRequester.
   */
  requester?: Requester;
  /**
   * The workflow was started with the search attributes of its first phase (PcdsState
   * `submitting`, PcdsOutcome `running`, its endpoint, key, batch and row): the call does not
   * upsert them again. Absent from calls started before it, which upsert them.
   */
  startedShowing?: true;
  /**
   * A batch's row: its submit may make its first poll (when it polls, with no cache), as the
   * batch decided, so the call records no version marker of its own. Absent: the call decides
   * (patch row-submit-makes-first-poll).
   */
  firstPollInSubmit?: true;
}

/** On an outcome the result cache gave: no request was made; the request id is the job's that fetched it. */
export interface CachedOutcome {
  cached?: true;
  /** When the cached result was fetched (ISO 8601). */
  fetchedAt?: string;
}

/** How long a finished job took and what it cost in polls, measured in workflow time. */
export interface CallTiming {
  /** From the accepted submit to the poll (or delivery) that saw the terminal status. */
  jobMs: number;
  /** Poll requests made (retries of one poll by Temporal not counted). */
  polls: number;
  /** The learned first-poll delay the call was given, if any. */
  firstPollDelayMs?: number;
}

export type CallOutcome =
  | ({
      outcome: 'found';
      requestId: string;
      status: string;
      /** The endpoint's result (person_search: the page's rows, as at data.results). */
      result: unknown;
      /** person_search: the page the rows are (offset, limit) and how to continue (has_more, ...). */
      page?: SearchPageInfo;
      timing?: CallTiming;
    } & CachedOutcome)
  | ({ outcome: 'empty'; requestId: string; status: string; timing?: CallTiming } & CachedOutcome)
  | { outcome: 'failed'; requestId?: string; code: string; message: string; httpStatus?: number };

/** Where a call stands, for queries and the Web UI. */
export interface CallState {
  phase: 'submitting' | 'polling' | 'waiting_for_webhook' | 'done';
  requestId?: string;
  lastStatus?: string;
  polls: number;
}
