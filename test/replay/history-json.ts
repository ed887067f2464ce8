// Workflow histories to and from the JSON that `temporal workflow show --output json` and the Web
// UI's download produce, so a history taken from a real server can join the replay tests too.
// The SDK's historyToJSON / historyFromJSON fail here with "type must be a Type": npm gives
// @temporalio/common and @temporalio/proto separate copies of protobufjs 8 (the gRPC client keeps
// protobufjs 7 at the top), and the JSON codec of one copy refuses the other's types. The codec
// is therefore loaded from the copy @temporalio/proto itself uses. Payloads are base64 in this
// JSON, so a search for a secret looks inside them too.
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

/** Text a reader of the raw history gets: the JSON, and every base64-encoded field decoded. */
export function readableText(json: string): string {
  const texts: string[] = [json];
  const walk = (value: unknown): void => {
    if (typeof value === 'string') texts.push(Buffer.from(value, 'base64').toString('utf8'));
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(JSON.parse(json));
  return texts.join('\n');
}

/** True when a secret appears in a history's JSON, as text or inside a base64-encoded payload. */
export function holdsSecret(json: string, secrets: string[]): boolean {
  const text = readableText(json);
  return secrets.some((secret) => text.includes(secret));
}
