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
import { verifyReceipt } from "./receipt.js";
import { formatVerdict, type Expectation } from "./report.js";
import { TrustFileError } from "./trust.js";

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
    return fail("unreadable_file", `cannot read the ${what} ${path} — check the path`);
  }
}

function readJson(path: string, what: string): unknown {
  const text = readText(path, what);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return fail("invalid_json", `the ${what} ${path} is not JSON — pass the file signoff wrote`);
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
    return fail("usage", `${(error as Error).message} — ${USAGE}`);
  }
  if (values.help === true) {
    console.log(USAGE);
    return 0;
  }
  if ((values.receipt === undefined) === (values.bundle === undefined)) fail("usage", `give one of --receipt and --bundle — ${USAGE}`);
  if (values.trust !== undefined && values.jwks !== undefined) fail("usage", "give --trust or --jwks, not both");
  const trustPath = values.trust ?? values.jwks;
  if (trustPath === undefined) {
    fail("no_trust_root", "no trust root — pass the deployment's --trust file (`signoff keys export-trust`) or --jwks; the keys inside what you verify are never trusted");
  }
  const trust = readJson(trustPath, values.trust !== undefined ? "trust file" : "JWKS");
  const held = (values.checkpoint ?? []).map((path) => readText(path, "checkpoint"));
  const expect: Expectation = {};
  if (values.proposal !== undefined) expect.proposal = values.proposal;
  if (values.digest !== undefined) {
    if (!/^[0-9a-f]{64}$/.test(values.digest)) fail("usage", "--digest is 64 lowercase hex characters (a SHA-256)");
    expect.digest = values.digest;
  }
  if (values.args !== undefined) expect.args = readJson(values.args, "arguments file");
  const verdict =
    values.receipt !== undefined
      ? await verifyReceipt(receiptDocument(readText(values.receipt, "receipt")), trust, { expect, held })
      : await verifyBundle(readJson(values.bundle as string, "bundle"), trust, { expect, held, allowUncovered: values["allow-uncovered"] === true });
  console.log(formatVerdict(verdict, (values.receipt ?? values.bundle) as string));
  return verdict.ok ? 0 : 1;
}

/** A receipt file: the compact JWS alone, or JSON (`{"signed_receipt", "checkpoint"}`, an execution answer). */
function receiptDocument(text: string): unknown {
  const trimmed = text.trim();
  if (!trimmed.startsWith("{")) return trimmed;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return fail("invalid_json", "the receipt file is neither a compact JWS nor JSON — pass the signed_receipt signoff returned");
  }
}

main(process.argv.slice(2)).then(
  (status) => process.exit(status),
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`error [${error.code}]: ${error.message}`);
    } else if (error instanceof TrustFileError) {
      console.error(`error [${error.code}]: ${error.message} — use the file \`signoff keys export-trust\` wrote`);
    } else {
      console.error(`error [internal]: ${String(error)}`);
    }
    process.exit(2);
  },
);
