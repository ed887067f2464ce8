// Workflow histories to and from the JSON that `temporal workflow show --output json` and the Web
// UI's download produce, so a history taken from a real server can join the replay tests too.
// The SDK's historyToJSON / historyFromJSON fail here with "type must be a Type": npm gives
// @temporalio/common and @temporalio/proto separate copies of protobufjs 8 (the gRPC client keeps
// protobufjs 7 at the top), and the JSON codec of one copy refuses the other's types. The codec
// is therefore loaded from the copy @temporalio/proto itself uses.
import { createRequire } from 'node:module';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import proto from '@temporalio/proto';

interface ProtoJson {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options: { ignoreUnknownFields: boolean }): unknown;
}

const fromProto = createRequire(createRequire(import.meta.url).resolve('@temporalio/proto'));
const protojson = fromProto('protobufjs/ext/protojson') as ProtoJson;
const HistoryType = proto.temporal.api.history.v1.History;

/** Pretty-printed proto JSON, as Temporal's tools write it. */
export function historyToJSON(history: History): string {
  return JSON.stringify(protojson.toJson(HistoryType, HistoryType.fromObject(history)), null, 2);
}

/** A history as the replayer takes it. Fields newer than this SDK knows are ignored. */
export function historyFromJSON(json: string): History {
  const parsed: unknown = JSON.parse(json);
  if (!parsed || typeof parsed !== 'object' || !Array.isArray((parsed as History).events))
    throw new TypeError('not a workflow history: expected an object with an array of events');
  return protojson.fromJson(HistoryType, parsed, { ignoreUnknownFields: true }) as History;
}
