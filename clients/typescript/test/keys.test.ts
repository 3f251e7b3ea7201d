// The decision key: the vectors the Java client and the Python tests check
// (clients/java/src/test/resources/confirmation-key-vectors.json), byte for byte.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { CONFIRMATION_KEY_PREFIX, confirmationIdempotencyKey, confirmationKeyMessage } from "@signoff/client";

interface Vector {
  proposal_id: string;
  version: number;
  message_hex: string;
  key: string;
}

const vectors = (
  JSON.parse(readFileSync(new URL("../../../java/src/test/resources/confirmation-key-vectors.json", import.meta.url), "utf8")) as {
    vectors: Vector[];
  }
).vectors;

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

test("every shared vector gives the same message and key as the Java and Python clients", async () => {
  assert.ok(vectors.length >= 8);
  for (const vector of vectors) {
    assert.equal(hex(confirmationKeyMessage(vector.proposal_id, vector.version)), vector.message_hex, vector.proposal_id);
    assert.equal(await confirmationIdempotencyKey(vector.proposal_id, vector.version), vector.key, vector.proposal_id);
  }
});

test("the message is length-prefixed UTF-8 bytes, written out independently", () => {
  // "提案-7" is 4 characters but 8 UTF-8 bytes: the prefix counts bytes.
  const id = "提案-7";
  const expected = Buffer.concat([Buffer.from([0, 0, 0, 8]), Buffer.from(id, "utf8"), Buffer.from([0, 0, 0, 1]), Buffer.from("3")]);
  assert.equal(hex(confirmationKeyMessage(id, 3)), expected.toString("hex"));
});

test("length prefixes keep (p1, 23) and (p12, 3) apart", async () => {
  const a = await confirmationIdempotencyKey("p1", 23);
  const b = await confirmationIdempotencyKey("p12", 3);
  assert.notEqual(a, b);
  assert.ok(a.startsWith(CONFIRMATION_KEY_PREFIX) && /^confirm:v1:[0-9a-f]{64}$/.test(a));
});

test("no key without an id or with a version outside 1..2^31", async () => {
  await assert.rejects(confirmationIdempotencyKey("", 1), TypeError);
  for (const version of [0, -1, 1.5, 2 ** 31 + 1, Number.NaN]) {
    await assert.rejects(confirmationIdempotencyKey("prop_1", version), RangeError, String(version));
  }
});
