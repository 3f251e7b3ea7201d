/**
 * RFC 8785 JSON Canonicalization Scheme, as docs/PROOF-FORMAT.md §1 states it.
 *
 * Written here rather than taken from the `canonicalize` package: RFC 8785 defines its string
 * and number serialisation *as* ECMAScript's `JSON.stringify`, so the scheme in JavaScript is
 * the member sort (UTF-16 code units: `Array.prototype.sort`'s own order) and a walk — and the
 * walk must refuse what the package passes through: lone surrogates (RFC 8785 §3.2.2.2 makes
 * them an error; `JSON.stringify` escapes them), non-finite numbers, `undefined`, and integers
 * beyond 2^53, which `JSON.parse` has already rounded, so hashing them would prove a number the
 * signer never saw.
 */
export class CanonicalizationError extends Error {
  override name = "CanonicalizationError";
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function jcs(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new CanonicalizationError(`${value} has no JSON form`);
      if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
        throw new CanonicalizationError(`the integer ${value} is beyond 2^53: JSON.parse has rounded it`);
      }
      return JSON.stringify(value);
    case "string":
      if (LONE_SURROGATE.test(value)) throw new CanonicalizationError("a string holds a lone surrogate");
      return JSON.stringify(value);
    case "object": {
      if (Array.isArray(value)) return `[${value.map((item) => jcs(item)).join(",")}]`;
      const object = value as Record<string, unknown>;
      const names = Object.keys(object).sort();
      return `{${names.map((name) => `${jcs(name)}:${jcs(object[name])}`).join(",")}}`;
    }
    default:
      throw new CanonicalizationError(`a ${typeof value} has no JSON form`);
  }
}
