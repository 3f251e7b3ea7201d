// @signoff/client/verify against the real `signoff serve --demo`: a write's signed receipt,
// fetched over HTTP, verified offline under the deployment's trust file; tampered copies refused
// with the codes `signoff audit verify` gives; bundles from `signoff audit export` reaching the
// same verdict as `signoff audit verify --bundle`.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { calculateJwkThumbprint, CompactSign, exportJWK, generateKeyPair, importJWK, type JWK } from "jose";

import { jcs, NoTrustRoot, verifyBundle, verifyReceipt, type Verdict } from "@signoff/client/verify";

import { client, env, ledgerOf, refund } from "./live.js";

const agent = client("AGENT");
const alice = client("ALICE");
const signoff = env("SIGNOFF_BIN");
const database = env("SIGNOFF_DEMO_DB");
const keyFile = `${database}.demo-signing-keys.json`; // the demo's key file, beside its database
const work = mkdtempSync(join(tmpdir(), "signoff-verify-"));
after(() => rmSync(work, { recursive: true, force: true }));

function run(...args: string[]): { status: number; stdout: string; stderr: string } {
  const done = spawnSync(signoff, args, { encoding: "utf8" });
  return { status: done.status ?? -1, stdout: done.stdout, stderr: done.stderr };
}

// The deployment's trust file, from its key file (never from what is verified).
const trustFile = join(work, "trust.json");
assert.equal(run("keys", "export-trust", "--keys", keyFile, "--tenant", "acme", "--out", trustFile).status, 0);
const trust = JSON.parse(readFileSync(trustFile, "utf8")) as Record<string, unknown>;

const codes = (verdict: Verdict): string[] => [...new Set(verdict.findings.map((f) => f.code))].sort();

/** `signoff audit verify` over the same file: its exit status and the codes of its BROKEN lines. */
function reference(kind: "--receipt" | "--bundle", document: unknown, trustPath = trustFile, ...flags: string[]): { status: number; codes: string[] } {
  const file = join(work, kind === "--receipt" ? "receipt.json" : "bundle.json");
  writeFileSync(file, typeof document === "string" ? document : JSON.stringify(document));
  const done = run("audit", "verify", kind, file, "--trust", trustPath, ...flags);
  const found = done.stderr.split("\n").filter((line) => line.startsWith("BROKEN [")).map((line) => line.slice(8, line.indexOf("]")));
  return { status: done.status, codes: [...new Set(found)].sort() };
}

async function refunded(orderId: string) {
  const proposed = await agent.propose("refund_order", refund(orderId));
  const shown = await alice.proposal(proposed.proposal_id);
  await alice.approve(shown);
  const { confirmation_token } = await agent.confirmationToken(proposed.proposal_id);
  const outcome = await agent.execute(proposed.proposal_id, confirmation_token);
  assert.equal(outcome.execution.status, "succeeded");
  assert.equal(typeof outcome.signed_receipt, "string");
  return { shown, outcome, signed: outcome.signed_receipt as string };
}

function claimsOf(jws: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jws.split(".")[1] as string, "base64url").toString("utf8")) as Record<string, unknown>;
}

/** A receipt signed with `key` over edited claims: what an insider (or an attacker) could make. */
async function signed(claims: Record<string, unknown>, key: JWK): Promise<string> {
  const privateKey = await importJWK(key, "EdDSA");
  return new CompactSign(new TextEncoder().encode(jcs(claims)))
    .setProtectedHeader({ alg: "EdDSA", kid: key.kid as string, typ: "signoff-receipt+jwt" })
    .sign(privateKey);
}

test("a write's signed receipt, fetched over HTTP, verifies offline and proves what the provider's ledger shows", async () => {
  const { shown, outcome, signed: jws } = await refunded("ord_1041");
  const [entry] = await ledgerOf("ord_1041");
  assert.ok(entry, "the provider refunded the order");
  const verdict = await verifyReceipt(jws, trust, { expect: { proposal: shown.proposal_id, digest: shown.args_digest, args: refund("ord_1041") } });
  assert.deepEqual(verdict.findings, []);
  assert.equal(verdict.ok, true);
  const [proven] = verdict.proven;
  assert.ok(proven);
  assert.deepEqual(
    [proven.proposal_id, proven.op.tool, proven.args_digest, proven.outcome, proven.provider_reference, proven.request_key, proven.execution_id],
    [shown.proposal_id, "refund_order", shown.args_digest, "succeeded", entry.reference, entry.request_key, outcome.execution.execution_id],
  );
  assert.deepEqual(proven.approvers.map((a) => [a.subject, a.role]), [["alice", "role:refund_approver"]]);
  assert.equal(proven.resource.id, "order:ord_1041");
  assert.equal(verdict.covered, verdict.events);
  // GET /v1/executions/{id} signs it again (with the cosignatures stored since): it verifies too,
  // as does the execution answer itself and signoff's own verifier.
  const again = await agent.execution(outcome.execution.execution_id);
  assert.equal((await verifyReceipt(again.signed_receipt, trust)).ok, true);
  assert.equal((await verifyReceipt(outcome, trust)).ok, true);
  assert.deepEqual(reference("--receipt", jws), { status: 0, codes: [] });
});

test("tampered receipts are refused with the codes signoff audit verify gives", async () => {
  const { signed: jws } = await refunded("ord_1042");
  const claims = claimsOf(jws);
  const [head, , tail] = jws.split(".");
  const keys = JSON.parse(readFileSync(keyFile, "utf8")) as { active: string; keys: JWK[] };
  const insider = keys.keys.find((k) => k.kid === keys.active) as JWK;
  const attacker = await exportJWK((await generateKeyPair("EdDSA", { extractable: true })).privateKey);
  attacker.kid = await calculateJwkThumbprint(attacker, "sha256");
  const evidence = claims["evidence"] as { events: { kind: string }[]; proofs: unknown[] };
  const keep = evidence.events.map((e, i) => (e.kind === "decision.approved" ? -1 : i)).filter((i) => i >= 0);
  const elsewhere = join(work, "elsewhere.json");
  writeFileSync(elsewhere, JSON.stringify({ ...trust, logs: [{ origin: "signoff.example.com/acme" }] }));
  const edited = `${head}.${Buffer.from(JSON.stringify({ ...claims, provider_reference: "re_forged" })).toString("base64url")}.${tail}`;
  const withoutApproval = { ...evidence, events: keep.map((i) => evidence.events[i]), proofs: keep.map((i) => evidence.proofs[i]) };
  // what, the receipt, the trust file, what the reader expects (with its flag), the code.
  const cases: [string, string, string, { proposal?: string }, string[], string][] = [
    ["an edited claim", edited, trustFile, {}, [], "receipt_signature"],
    ["another key", await signed(claims, attacker), trustFile, {}, [], "receipt_signature"],
    ["an insider's receipt without its approval", await signed({ ...claims, evidence: withoutApproval }, insider), trustFile, {}, [], "executed_without_approval"],
    ["an insider's receipt stating another outcome", await signed({ ...claims, outcome: "failed_terminal" }, insider), trustFile, {}, [], "receipt_mismatch"],
    ["an untrusted origin", jws, elsewhere, {}, [], "origin_untrusted"],
    ["a wrong expectation", jws, trustFile, { proposal: "prop_someone_else" }, ["--proposal", "prop_someone_else"], "not_the_expected_proof"],
  ];
  for (const [what, token, trustPath, expect, flags, code] of cases) {
    const verdict = await verifyReceipt(token, JSON.parse(readFileSync(trustPath, "utf8")), { expect });
    const python = reference("--receipt", token, trustPath, ...flags);
    assert.equal(verdict.ok, false, what);
    assert.ok(codes(verdict).includes(code), `${what}: ${codes(verdict).join(", ")}`);
    assert.deepEqual(codes(verdict), python.codes, what);
    assert.equal(python.status, 1, what);
  }
  await assert.rejects(verifyReceipt(jws, null), NoTrustRoot);
  await assert.rejects(verifyReceipt(jws, { keys: [{ ...insider }] }), /private members/);
});

test("bundles from signoff audit export reach the verdict of signoff audit verify --bundle", async () => {
  await refunded("ord_1043");
  const file = join(work, "acme.json");
  const exported = run("audit", "export", "--db", database, "--tenant", "acme", "--keys", keyFile, "--out", file);
  assert.equal(exported.status, 0, exported.stderr);
  const bundle = JSON.parse(readFileSync(file, "utf8")) as { events: Record<string, unknown>[]; checkpoints: string[]; consistency: unknown[] };
  const verdict = await verifyBundle(bundle, trust);
  assert.deepEqual(verdict.findings, []);
  assert.ok(verdict.proven.some((p) => p.resource.id === "order:ord_1043" && p.outcome === "succeeded"));
  assert.equal(verdict.uncovered, 0);
  assert.deepEqual(reference("--bundle", bundle), { status: 0, codes: [] });

  const sizes = bundle.checkpoints.map((note) => Number(note.split("\n")[1]));
  const since = join(work, "since.json");
  const middle = sizes[Math.floor(sizes.length / 2)] as number;
  assert.equal(run("audit", "export", "--db", database, "--tenant", "acme", "--keys", keyFile, "--since", String(middle), "--out", since).status, 0);
  const range = JSON.parse(readFileSync(since, "utf8")) as unknown;
  assert.deepEqual(codes(await verifyBundle(range, trust)), []);
  assert.deepEqual(reference("--bundle", range).codes, []);

  const copy = (): typeof bundle => JSON.parse(JSON.stringify(bundle)) as typeof bundle;
  const edited = copy();
  (edited.events[1] as Record<string, unknown>)["actor"] = "mallory";
  const cut = copy();
  cut.events = cut.events.slice(0, -2);
  const unsigned = copy();
  unsigned.checkpoints = [];
  unsigned.consistency = [];
  for (const [code, forged] of [["event_edited", edited], ["events_missing", cut], ["no_checkpoint", unsigned]] as const) {
    const found = codes(await verifyBundle(forged, trust));
    assert.ok(found.includes(code), `${code}: ${found.join(", ")}`);
    assert.deepEqual(found, reference("--bundle", forged).codes, code);
  }
});
