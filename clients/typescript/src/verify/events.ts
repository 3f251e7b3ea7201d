/** Audit events as they travel in bundles and receipts (docs/PROOF-FORMAT.md §2). */
import { isHex64, sha256Hex } from "./bytes.js";
import { jcs } from "./jcs.js";

export const GENESIS = "0".repeat(64);

export interface AuditEvent {
  tenant: string;
  seq: number;
  at: number;
  kind: string;
  proposal_id: string | null;
  execution_id: string | null;
  actor: string | null;
  /** The payload as signed: a JSON text, hashed as this string. */
  data: string;
  prev_hash: string;
  hash: string;
  mac?: string;
}

const nullableString = (value: unknown): value is string | null => value === null || typeof value === "string";

/** The event, or why it is not one (its members and their types). */
export function parseEvent(value: unknown): AuditEvent | string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "an event is not a JSON object";
  const e = value as Record<string, unknown>;
  if (typeof e["tenant"] !== "string") return "an event has no tenant";
  if (typeof e["seq"] !== "number" || !Number.isSafeInteger(e["seq"]) || e["seq"] < 1) return "an event's seq is not an integer ≥ 1";
  if (typeof e["at"] !== "number" || !Number.isSafeInteger(e["at"])) return `event ${e["seq"]}'s at is not an integer`;
  if (typeof e["kind"] !== "string") return `event ${e["seq"]} has no kind`;
  if (!nullableString(e["proposal_id"]) || !nullableString(e["execution_id"]) || !nullableString(e["actor"])) {
    return `event ${e["seq"]}'s proposal_id, execution_id or actor is not a string or null`;
  }
  if (typeof e["data"] !== "string") return `event ${e["seq"]}'s data is not a string`;
  if (!isHex64(e["prev_hash"]) || !isHex64(e["hash"])) return `event ${e["seq"]}'s prev_hash or hash is not 64 lowercase hex`;
  if (e["mac"] !== undefined && e["mac"] !== null && typeof e["mac"] !== "string") return `event ${e["seq"]}'s mac is not a string`;
  const event: AuditEvent = {
    tenant: e["tenant"],
    seq: e["seq"],
    at: e["at"],
    kind: e["kind"],
    proposal_id: e["proposal_id"] as string | null,
    execution_id: e["execution_id"] as string | null,
    actor: e["actor"] as string | null,
    data: e["data"],
    prev_hash: e["prev_hash"],
    hash: e["hash"],
  };
  if (typeof e["mac"] === "string") event.mac = e["mac"];
  return event;
}

/** `hex(SHA-256(UTF-8(JCS(D))))`, `D` the nine members plus `mac` only when the event has one. */
export function eventHash(event: AuditEvent): string {
  const d: Record<string, unknown> = {
    actor: event.actor,
    at: event.at,
    data: event.data,
    execution_id: event.execution_id,
    kind: event.kind,
    prev_hash: event.prev_hash,
    proposal_id: event.proposal_id,
    seq: event.seq,
    tenant: event.tenant,
  };
  if (event.mac !== undefined) d["mac"] = event.mac;
  return sha256Hex(jcs(d));
}

/** The event's `data` as an object; `{}` when it is not the JSON text of one. */
export function eventData(event: AuditEvent): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(event.data);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
