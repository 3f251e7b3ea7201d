// The verifier's building blocks, offline, against published vectors and hand-made inputs:
// RFC 9162 proofs (the CT and C2SP CCTV vectors signoff's own tests use), RFC 8785 JCS, C2SP
// signed notes, the trust file, and the CLI's refusals (exit 2, `error [code]: …`).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash, generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

import { calculateJwkThumbprint, type JWK } from "jose";

import {
  CanonicalizationError,
  jcs,
  openCheckpoint,
  parseTrust,
  ProofFormatError,
  verifyBundle,
  verifyConsistency,
  verifyInclusion,
} from "@signoff/client/verify";

const repository = fileURLToPath(new URL("../../../../", import.meta.url));
const cli = fileURLToPath(new URL("../../dist/verify/cli.js", import.meta.url));
const vectors = JSON.parse(readFileSync(join(repository, "tests", "proof", "merkle_vectors.json"), "utf8")) as {
  ct: { leaves: string[]; roots: string[]; inclusion: { leaf: number; size: number; proof: string[] }[]; consistency: { size1: number; size2: number; proof: string[] }[] };
  cctv: Record<"inclusion_valid" | "consistency_valid" | "consistency_invalid", Record<string, unknown>[]>;
};
const work = mkdtempSync(join(tmpdir(), "signoff-formats-"));
after(() => rmSync(work, { recursive: true, force: true }));

const sha = (...parts: Uint8Array[]): Uint8Array => {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return new Uint8Array(hash.digest());
};
const hex = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, "hex"));
const b64 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, "base64"));

test("RFC 9162 inclusion and consistency proofs: the CT vectors verify, and every corruption is refused", () => {
  const leaves = vectors.ct.leaves.map((data) => sha(new Uint8Array([0]), hex(data)));
  const roots = vectors.ct.roots.map(hex);
  const some = hex(`abacaba0${"00".repeat(26)}1234`);
  const flip = (path: Uint8Array[], i: number, bit: number): Uint8Array[] => path.map((h, j) => (j === i ? new Uint8Array([(h[0] as number) ^ bit, ...h.subarray(1)]) : h));
  for (const [n, { leaf, size, proof }] of vectors.ct.inclusion.entries()) {
    const [index, path, hash, root] = [leaf - 1, proof.map(hex), leaves[leaf - 1] as Uint8Array, roots[size] as Uint8Array];
    assert.ok(verifyInclusion(index, size, hash, path, root), `${leaf} of ${size}`);
    if (n === 0) continue;
    // signoff's own corruptions (tests/proof/test_merkle.py): index, size, leaf, root, an extra, missing or flipped node.
    const bad: [number, number, Uint8Array, Uint8Array[], Uint8Array][] = [
      [index + 1, size, hash, path, root], [index ^ 2, size, hash, path, root], [index, size * 2, hash, path, root],
      [index, Math.floor(size / 2), hash, path, root], [index, size, some, path, root], [index, size, hash, path, some],
      [index, size, hash, [...path, root], root], [index, size, hash, [root, ...path], root],
      ...(index > 0 ? [[index - 1, size, hash, path, root] as [number, number, Uint8Array, Uint8Array[], Uint8Array]] : []),
      ...path.map((_, i) => [index, size, hash, flip(path, i, 8), root] as [number, number, Uint8Array, Uint8Array[], Uint8Array]),
      ...(path.length > 0 ? [[index, size, hash, path.slice(0, -1), root] as [number, number, Uint8Array, Uint8Array[], Uint8Array]] : []),
    ];
    for (const args of bad) assert.ok(!verifyInclusion(...args), `${leaf} of ${size}: ${args[0]}, ${args[1]}`);
  }
  for (const [n, { size1: m, size2: size, proof }] of vectors.ct.consistency.entries()) {
    const [path, r1, r2] = [proof.map(hex), roots[m] as Uint8Array, roots[size] as Uint8Array];
    assert.ok(verifyConsistency(m, size, r1, r2, path), `${m} to ${size}`);
    if (n === 0) continue;
    const bad: [number, number, Uint8Array, Uint8Array, Uint8Array[]][] = [
      [m - 1, size, r1, r2, path], [m + 1, size, r1, r2, path], [m ^ 2, size, r1, r2, path], [m, size * 2, r1, r2, path],
      [m, Math.floor(size / 2), r1, r2, path], [m, size, r2, r1, path], [m, size, r1, r2, []], [m, size, r1, r2, path.slice(0, -1)],
      [m, size, r1, r2, [...path, r1]], [m, size, r1, r2, [r2, ...path]], [m, size, r1, r2, [path[0] as Uint8Array, ...path]],
      ...path.map((_, i) => [m, size, r1, r2, flip(path, i, 16)] as [number, number, Uint8Array, Uint8Array, Uint8Array[]]),
    ];
    for (const args of bad) assert.ok(!verifyConsistency(...args), `${m} to ${size}: ${args[0]}, ${args[1]}`);
  }
});

test("RFC 9162 proofs: the C2SP CCTV vectors, valid and mutated", () => {
  for (const c of vectors.cctv.inclusion_valid) {
    assert.ok(verifyInclusion(c["leaf_index"] as number, c["tree_size"] as number, b64(c["leaf_hash"] as string), (c["inclusion_path"] as string[]).map(b64), b64(c["root_hash"] as string)));
  }
  for (const c of vectors.cctv.consistency_valid) {
    assert.ok(verifyConsistency(c["old_size"] as number, c["new_size"] as number, b64(c["old_root"] as string), b64(c["new_root"] as string), (c["consistency_path"] as string[]).map(b64)));
  }
  for (const c of vectors.cctv.consistency_invalid) {
    assert.ok(!verifyConsistency(c["old_size"] as number, c["new_size"] as number, b64(c["old_root"] as string), b64(c["new_root"] as string), (c["consistency_path"] as string[]).map(b64)), JSON.stringify(c));
  }
});

test("RFC 8785 JCS: UTF-16 member order, ECMAScript numbers and escapes; what JSON.parse already lost is refused", () => {
  // RFC 8785 §3.2.3's sorting example.
  const sorted = jcs({ "\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis" });
  const order = ["\\r", "1", "\u0080", "\u00f6", "\u20ac", "\ud83d\ude00", "\ufb33"].map((name) => sorted.indexOf(`"${name}":`));
  assert.ok(order.every((at, i) => at >= 0 && (i === 0 || at > (order[i - 1] as number))), sorted);
  assert.equal(jcs({ b: [1.5e-7, -0, 0.5, null, true], a: "\u0007\"\\/\u2028é\n" }), '{"a":"\\u0007\\"\\\\/\u2028é\\n","b":[1.5e-7,0,0.5,null,true]}');
  assert.throws(() => jcs({ a: 1e21 }), CanonicalizationError, "an integer JSON.parse may have rounded");
  assert.throws(() => jcs({ a: "\ud800" }), CanonicalizationError);
  assert.throws(() => jcs({ a: 2 ** 53 + 2 }), CanonicalizationError);
  assert.throws(() => jcs({ a: Number.NaN }), CanonicalizationError);
  assert.throws(() => jcs({ a: undefined }), CanonicalizationError);
});

// A checkpoint signed here, independently of signoff: the log's 0x01 and 0x04 lines.
function keyId(name: string, type: number, raw: Uint8Array): Buffer {
  return Buffer.from(sha(Buffer.from(name), new Uint8Array([0x0a, type]), raw).subarray(0, 4));
}

function line(name: string, key: KeyObject, raw: Uint8Array, text: string, time: number | null): string {
  if (time === null) return `\u2014 ${name} ${Buffer.concat([keyId(name, 0x01, raw), sign(null, Buffer.from(text), key)]).toString("base64")}\n`;
  const stamp = Buffer.alloc(8);
  stamp.writeBigUInt64BE(BigInt(time));
  const signature = sign(null, Buffer.from(`cosignature/v1\ntime ${time}\n${text}`), key);
  return `\u2014 ${name} ${Buffer.concat([keyId(name, 0x04, raw), stamp, signature]).toString("base64")}\n`;
}

async function log(window: { not_before?: number; not_after?: number } = {}) {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const jwk = publicKey.export({ format: "jwk" }) as JWK;
  const raw = new Uint8Array(Buffer.from(jwk.x as string, "base64url"));
  const entry = { ...jwk, alg: "EdDSA", use: "sig", purposes: ["checkpoint", "receipt"], ...window, kid: await calculateJwkThumbprint(jwk, "sha256") };
  const note = (origin: string, text: string, time: number | null = 1000): string =>
    `${text}\n${line(origin, privateKey, raw, text, null)}${time === null ? "" : line(origin, privateKey, raw, text, time)}`;
  return { entry, note, privateKey, raw };
}

const ORIGIN = "signoff.example.com/acme";
const BODY = `${ORIGIN}\n0\n${Buffer.from(sha()).toString("base64")}\n`;

test("C2SP signed notes: the log's two lines open; a bad form, a failing known line, extension lines or a late signature do not", async () => {
  const k = await log({ not_after: 2000 });
  const trust = await parseTrust({ keys: [k.entry] });
  const opened = openCheckpoint(k.note(ORIGIN, BODY), trust, ORIGIN);
  assert.deepEqual([opened.size, opened.time, opened.kid, opened.cosignatures], [0, 1000, k.entry.kid, []]);
  const unknown = `\u2014 someone.else ${Buffer.alloc(68, 1).toString("base64")}\n`;
  assert.equal(openCheckpoint(k.note(ORIGIN, BODY) + unknown, trust, ORIGIN).size, 0, "an unknown key's line is ignored");
  const refusals: [string, string][] = [
    ["no blank line", BODY + "\u2014 x y\n"],
    ["a control character", k.note(ORIGIN, BODY.replace("\n0\n", "\n0\t\n"))],
    ["a line without the em dash", k.note(ORIGIN, BODY).replace("\u2014 ", "- ")],
    ["an extension line", k.note(ORIGIN, `${BODY}extension\n`)],
    ["another origin", k.note("signoff.example.com/globex", BODY.replace("acme", "globex"))],
    ["a tampered signature", k.note(ORIGIN, BODY).replace(/[A-Za-z](=*\n)$/, (m) => (m[0] === "A" ? "B" : "A") + m.slice(1))],
    ["a retired key without a signed time", k.note(ORIGIN, BODY, null)],
    ["a retired key's late signature", k.note(ORIGIN, BODY, 2000)],
    ["seventeen signature lines", k.note(ORIGIN, BODY) + unknown.repeat(15)],
  ];
  for (const [what, note] of refusals) assert.throws(() => openCheckpoint(note, trust, ORIGIN), /./, what);
});

test("the trust file: a thumbprint kid, public keys, a known alg and purposes, well-formed witnesses — else proof_format", async () => {
  const k = await log();
  const good = { format: "signoff-trust/1", jwks: { keys: [k.entry] }, logs: [{ origin: ORIGIN }], witnesses: [], witness_quorum: 0, identity_providers: [] };
  const root = await parseTrust(good);
  assert.deepEqual([root.logs, root.witnessQuorum, [...(root.keys[0]?.purposes ?? [])]], [[ORIGIN], 0, ["receipt", "checkpoint"]]);
  const witnessRaw = new Uint8Array(32).fill(7);
  const vkey = `w.example/w1+${keyId("w.example/w1", 0x04, witnessRaw).toString("hex")}+${Buffer.concat([Buffer.from([4]), witnessRaw]).toString("base64")}`;
  assert.equal((await parseTrust({ ...good, witnesses: [{ name: "w.example/w1", vkey }], witness_quorum: undefined })).witnessQuorum, 1, "quorum: all listed by default");
  const bad: [string, unknown][] = [
    ["a kid that is not the thumbprint", { ...good, jwks: { keys: [{ ...k.entry, kid: "mine" }] } }],
    ["a private key", { ...good, jwks: { keys: [{ ...k.entry, d: "AAAA" }] } }],
    ["an alg other than the key's", { ...good, jwks: { keys: [{ ...k.entry, alg: "ES256" }] } }],
    ["an unknown purpose", { ...good, jwks: { keys: [{ ...k.entry, purposes: ["everything"] }] } }],
    ["a quorum above the witnesses", { ...good, witness_quorum: 1 }],
    ["a vkey with another key ID", { ...good, witnesses: [{ vkey: vkey.replace(/\+[0-9a-f]{8}\+/, "+00000000+") }] }],
    ["another format", { ...good, format: "signoff-trust/2" }],
    ["no key", { keys: [] }],
  ];
  for (const [what, document] of bad) await assert.rejects(parseTrust(document), ProofFormatError, what);
  await assert.rejects(verifyBundle({ format: "signoff-audit-bundle/0" }, good), ProofFormatError);
});

test("signoff-verify refuses to start without a trust root or readable input: exit 2 and one line", () => {
  const trustFile = join(work, "jwks.json");
  writeFileSync(trustFile, JSON.stringify({ keys: [] }));
  const cases: [string[], string][] = [
    [["--receipt", trustFile], "error [no_trust_root]"],
    [["--receipt", trustFile, "--trust", trustFile, "--jwks", trustFile], "error [invalid_request]"],
    [["--bundle", join(work, "missing.json"), "--jwks", trustFile], "error [proof_format]"],
    [["--bundle", trustFile, "--trust", trustFile], "error [proof_format]"],
    [["--bundle", trustFile, "--jwks", trustFile], "error [proof_format]"],
    [["--nonsense"], "error [invalid_request]"],
  ];
  for (const [args, expected] of cases) {
    const done = spawnSync(process.execPath, [cli, ...args], { encoding: "utf8" });
    assert.equal(done.status, 2, args.join(" "));
    assert.ok(done.stderr.startsWith(expected), `${args.join(" ")}: ${done.stderr}`);
    assert.equal(done.stderr.trim().split("\n").length, 1);
  }
});
