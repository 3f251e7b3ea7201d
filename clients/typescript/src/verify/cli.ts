#!/usr/bin/env node
/**
 * `signoff-verify`: check a signed receipt or an audit bundle offline, as
 * `signoff audit verify --receipt/--bundle` does, with this package's verifier.
 *
 *     npx signoff-verify --receipt receipt.json --trust trust.json [--proposal ID] [--digest HEX] [--args FILE]
 *     npx signoff-verify --bundle acme.json --trust trust.json [--checkpoint NOTE]… [--allow-uncovered]
 *
 * Exit 0: verified; 1: a check failed (each `BROKEN [code] …`); 2: the command could not
 * verify at all (`error [code]: … — what to do`).
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

import { verifyBundle } from "./bundle.js";
import { ProofFormatError } from "./errors.js";
import { verifyReceipt } from "./receipt.js";
import { formatVerdict, type Expectation } from "./report.js";

const USAGE = "usage: signoff-verify (--receipt FILE | --bundle FILE) (--trust FILE | --jwks FILE) [--checkpoint NOTE]… [--allow-uncovered] [--proposal ID] [--digest HEX] [--args FILE]";

class UsageError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function fail(code: string, message: string): never {
  throw new UsageError(code, message);
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return fail("proof_format", `cannot read the ${what} ${path} — check the path`);
  }
}

function readJson(path: string, what: string): unknown {
  const text = readText(path, what);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return fail("proof_format", `the ${what} ${path} is not JSON — export it again`);
  }
}

async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        receipt: { type: "string" },
        bundle: { type: "string" },
        trust: { type: "string" },
        jwks: { type: "string" },
        checkpoint: { type: "string", multiple: true },
        "allow-uncovered": { type: "boolean" },
        proposal: { type: "string" },
        digest: { type: "string" },
        args: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    return fail("invalid_request", `${(error as Error).message} — ${USAGE}`);
  }
  if (values.help === true) {
    console.log(USAGE);
    return 0;
  }
  if ((values.receipt === undefined) === (values.bundle === undefined)) fail("invalid_request", `pass one of --bundle or --receipt — ${USAGE}`);
  if (values.trust !== undefined && values.jwks !== undefined) fail("invalid_request", "pass one of --jwks or --trust — not both");
  const trustPath = values.trust ?? values.jwks;
  if (trustPath === undefined) {
    fail("no_trust_root", "nothing verifies without a trust root obtained apart from what you verify — pass --trust FILE (`signoff keys export-trust`) or --jwks FILE");
  }
  const trust = readJson(trustPath, values.trust !== undefined ? "trust file" : "JWKS");
  const isTrustFile = typeof trust === "object" && trust !== null && "format" in trust;
  if (values.trust !== undefined && !isTrustFile) fail("proof_format", `the trust file ${trustPath} is not a signoff-trust/1 document — a JWKS goes with --jwks`);
  if (values.jwks !== undefined && isTrustFile) fail("proof_format", `${trustPath} is a trust file — pass it with --trust`);
  const held = (values.checkpoint ?? []).map((path) => readText(path, "checkpoint"));
  const expect: Expectation = {};
  if (values.proposal !== undefined) expect.proposal = values.proposal;
  if (values.digest !== undefined) {
    if (!/^[0-9a-f]{64}$/.test(values.digest)) fail("invalid_request", "--digest is 64 lowercase hex characters (a SHA-256)");
    expect.digest = values.digest;
  }
  if (values.args !== undefined) expect.args = readJson(values.args, "arguments file");
  const verdict =
    values.receipt !== undefined
      ? await verifyReceipt(readText(values.receipt, "receipt"), trust, { expect, held })
      : await verifyBundle(readJson(values.bundle as string, "bundle"), trust, { expect, held, allowUncovered: values["allow-uncovered"] === true });
  // As `signoff audit verify`: the BROKEN lines on stderr, the rest on stdout.
  for (const line of formatVerdict(verdict, (values.receipt ?? values.bundle) as string).split("\n")) {
    if (line.startsWith("BROKEN ")) console.error(line);
    else console.log(line);
  }
  return verdict.ok ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (status) => process.exit(status),
  (error: unknown) => {
    if (error instanceof UsageError || error instanceof ProofFormatError) {
      console.error(`error [${error.code}]: ${error.message}`);
    } else {
      console.error(`error [internal]: ${String(error)}`);
    }
    process.exit(2);
  },
);
