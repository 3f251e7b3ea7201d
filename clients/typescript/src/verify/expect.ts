/** What the reader expects (docs/PROOF-FORMAT.md §10, `not_the_expected_proof`). */
import { sha256Hex } from "./bytes.js";
import { CanonicalizationError, jcs } from "./jcs.js";
import type { Expectation, Findings, ProvenExecution } from "./report.js";

/** `hex(SHA-256(JCS({"args", "tool", "tool_version"})))`: the args digest of canonical arguments. */
export function argsDigest(tool: string, toolVersion: string, args: unknown): string {
  return sha256Hex(jcs({ args, tool, tool_version: toolVersion }));
}

/** At least one proven execution must meet every expectation given. */
export function checkExpectation(proven: readonly ProvenExecution[], expect: Expectation | undefined, findings: Findings): void {
  if (expect === undefined || (expect.proposal === undefined && expect.digest === undefined && !("args" in expect))) return;
  let argsError: string | null = null;
  const meets = (p: ProvenExecution): boolean => {
    if (expect.proposal !== undefined && p.proposal_id !== expect.proposal) return false;
    if (expect.digest !== undefined && p.args_digest !== expect.digest) return false;
    if ("args" in expect) {
      if (p.op.tool === null || p.op.version === null) return false;
      try {
        if (argsDigest(p.op.tool, p.op.version, expect.args) !== p.args_digest) return false;
      } catch (error) {
        if (!(error instanceof CanonicalizationError)) throw error;
        argsError = error.message;
        return false;
      }
    }
    return true;
  };
  if (proven.some(meets)) return;
  const wanted = [
    expect.proposal === undefined ? null : `proposal ${expect.proposal}`,
    expect.digest === undefined ? null : `args digest ${expect.digest}`,
    "args" in expect ? `the arguments given${argsError === null ? "" : ` (${argsError})`}` : null,
  ].filter((w) => w !== null);
  findings.add("not_the_expected_proof", `no proven execution is of ${wanted.join(" with ")}; proven: ${proven.map((p) => `${p.proposal_id} (${p.args_digest})`).join(", ") || "none"}`);
}
