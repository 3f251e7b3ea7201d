/**
 * The API's documents, named after openapi.json's component schemas. They come from
 * `src/generated/openapi.ts` (openapi-typescript, `npm run generate`; `npm run check:types`
 * fails when it drifts from ../../openapi.json), so a field the server adds is one
 * regeneration away. Answers are read as the server sent them: members this version does not
 * know are kept, never refused.
 */
import type { components, operations } from "./generated/openapi.js";

type Schemas = components["schemas"];

export type ProposalView = Schemas["ProposalView"];
export type ProposalList = Schemas["ProposalList"];
export type InboxView = Schemas["InboxView"];
export type ProposeRequest = Schemas["ProposeRequest"];
export type DecisionRequest = Schemas["DecisionRequest"];
export type DecisionView = Schemas["DecisionView"];
export type ConfirmationTokenView = Schemas["ConfirmationTokenView"];
export type ExecuteRequest = Schemas["ExecuteRequest"];
export type ExecutionView = Schemas["ExecutionView"];
export type ExecutionOutcomeView = Schemas["ExecutionOutcomeView"];
export type ExecutionStatusView = Schemas["ExecutionStatusView"];
export type ReceiptView = Schemas["ReceiptView"];
export type PreviewView = Schemas["PreviewView"];
export type PreviewFieldView = Schemas["PreviewFieldView"];
export type RiskView = Schemas["RiskView"];
export type ApprovalView = Schemas["ApprovalView"];
export type RequesterView = Schemas["RequesterView"];
export type AuditEventView = Schemas["AuditEventView"];
export type AuditLog = Schemas["AuditLog"];
export type WhoAmI = Schemas["WhoAmI"];
export type Problem = Schemas["Problem"];
export type ProposalStatus = Schemas["ProposalStatus"];
export type RevokeRequest = Schemas["RevokeRequest"];
export type Jwks = Schemas["Jwks"];

export type Decision = DecisionRequest["decision"];

/** The operations by operationId, for code that wants the parameter types. */
export type Operations = operations;

/** `GET /v1/demo/provider/ledger` (demo mode only, so not in openapi.json). */
export interface DemoLedgerEntry {
  request_key: string;
  reference: string;
  tenant: string;
  order_id: string;
  amount_minor: number;
  currency: string;
  [member: string]: unknown;
}

/** `GET /v1/demo/orders/{id}` (demo mode only). */
export interface DemoOrder {
  tenant: string;
  order_id: string;
  owner: string;
  currency: string;
  payable_minor: number;
  refunded_minor: number;
  version: number;
  [member: string]: unknown;
}
