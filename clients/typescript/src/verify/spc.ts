/**
 * Secure Payment Confirmation (docs/PROOF-FORMAT.md §9): what the browser showed — the
 * client data's `payment.payeeName` and `payment.total` — must be what the proposal's
 * preview displays, and the preview must be the one whose digest `proposal.created`
 * recorded (SHA-256 of Python's `json.dumps(preview, sort_keys=True)`).
 */
import { sha256Hex } from "./bytes.js";

const PAYEE_FIELDS = ["payee", "payee_name", "recipient", "beneficiary"];
const EXPONENTS: Record<string, number> = {};
for (const c of "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF".split(" ")) EXPONENTS[c] = 0;
for (const c of "BHD IQD JOD KWD LYD OMR TND".split(" ")) EXPONENTS[c] = 3;
for (const c of "CLF UYW".split(" ")) EXPONENTS[c] = 4;

type Json = Record<string, unknown>;
const object = (value: unknown): Json | null => (typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : null);

/** `100000` fen as `"1000.00"`: minor units in the currency's ISO 4217 major units. */
export function majorUnits(minor: number, currency: string): string {
  const digits = EXPONENTS[currency.toUpperCase()] ?? 2;
  if (digits === 0) return String(minor);
  const padded = String(minor).padStart(digits + 1, "0");
  return `${padded.slice(0, -digits)}.${padded.slice(-digits)}`;
}

function pyString(text: string): string {
  let out = '"';
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    const c = text[i] as string;
    if (c === '"' || c === "\\") out += `\\${c}`;
    else if (c === "\n") out += "\\n";
    else if (c === "\r") out += "\\r";
    else if (c === "\t") out += "\\t";
    else if (c === "\b") out += "\\b";
    else if (c === "\f") out += "\\f";
    else if (code < 0x20 || code > 0x7e) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else out += c;
  }
  return `${out}"`;
}

/** Python's `json.dumps(value, sort_keys=True)` (ASCII output, ", " and ": " separators). */
export function pyJson(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (value === true || value === false) return String(value);
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : String(value);
  if (typeof value === "string") return pyString(value);
  if (Array.isArray(value)) return `[${value.map(pyJson).join(", ")}]`;
  const o = value as Json;
  return `{${Object.keys(o).sort().map((k) => `${pyString(k)}: ${pyJson(o[k])}`).join(", ")}}`;
}

/** What the browser's dialog must show for this preview; null when it moves no money. */
export function spcDisplay(preview: Json): { payeeName: string; total: { currency: string; value: string } } | null {
  const fields = (Array.isArray(preview["fields"]) ? preview["fields"] : []).map(object).filter((f): f is Json => f !== null);
  const amount = fields.find((f) => typeof f["currency"] === "string" && Number.isSafeInteger(f["machine_value"]) && (f["machine_value"] as number) >= 0);
  if (amount === undefined) return null;
  const payee = fields.find((f) => PAYEE_FIELDS.includes(String(f["name"])));
  const currency = String(amount["currency"]).toUpperCase();
  return {
    payeeName: String(payee === undefined ? preview["title"] : payee["display_value"]),
    total: { currency, value: majorUnits(amount["machine_value"] as number, currency) },
  };
}

/** Null when a payment confirmation showed the recorded preview's payee and amount, else why not. */
export function paymentRefusal(clientData: Json, preview: unknown, previewDigest: string | null): string | null {
  const p = object(preview);
  if (p === null || previewDigest === null) return "a payment confirmation without the proposal's preview";
  if (sha256Hex(pyJson(p)) !== previewDigest) return "the payment confirmation's preview is not the proposal's";
  const expected = spcDisplay(p);
  if (expected === null) return "a payment confirmation for a proposal that moves no money";
  const shown = object(clientData["payment"]);
  if (shown === null) return "the payment confirmation's client data has no payment member";
  if (shown["payeeName"] !== expected.payeeName) return `the browser showed payee ${JSON.stringify(shown["payeeName"])}, the proposal displays ${JSON.stringify(expected.payeeName)}`;
  const total = object(shown["total"]);
  if (total === null || total["currency"] !== expected.total.currency || total["value"] !== expected.total.value) {
    return `the browser showed the amount ${JSON.stringify(shown["total"])}, the proposal displays ${JSON.stringify(expected.total)}`;
  }
  return null;
}
