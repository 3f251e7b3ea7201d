/**
 * RFC 9162 (Certificate Transparency v2) Merkle trees, §2.1: leaf and node hashes, the tree of
 * a growing log as its frontier, and the verification of inclusion (§2.1.3.2) and consistency
 * (§2.1.4.2) proofs. A few dozen lines written from the RFC (no npm package implements these
 * proofs as CT defines them); tested against the CT and C2SP vectors in
 * tests/proof/merkle_vectors.json.
 */
import { equalBytes, fromHex, sha256 } from "./bytes.js";

const LEAF = new Uint8Array([0x00]);
const NODE = new Uint8Array([0x01]);

/** `SHA-256(0x00 || the 32 raw bytes of the event's hash)`. */
export function leafHash(eventHashHex: string): Uint8Array {
  return sha256(LEAF, fromHex(eventHashHex));
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  return sha256(NODE, left, right);
}

export const EMPTY_ROOT = sha256();

// Sizes and indices stay far below 2^53; halving with arithmetic, never 32-bit `>>`.
const half = (n: number): number => Math.floor(n / 2);
const odd = (n: number): boolean => n % 2 === 1;

/**
 * A log's tree as it grows: the roots of its perfect subtrees, largest first (the bundle's
 * `start.frontier`), which fold right-to-left into the root.
 */
export class Frontier {
  private readonly nodes: { hash: Uint8Array; size: number }[] = [];
  size = 0;

  /** The frontier of a tree of `size` leaves from its subtree roots (largest first); null when they do not fit. */
  static of(size: number, roots: Uint8Array[]): Frontier | null {
    const sizes = frontierSizes(size);
    if (sizes.length !== roots.length) return null;
    const frontier = new Frontier();
    sizes.forEach((n, i) => frontier.nodes.push({ hash: roots[i] as Uint8Array, size: n }));
    frontier.size = size;
    return frontier;
  }

  append(leaf: Uint8Array): void {
    let node = { hash: leaf, size: 1 };
    for (let last = this.nodes.at(-1); last !== undefined && last.size === node.size; last = this.nodes.at(-1)) {
      this.nodes.pop();
      node = { hash: nodeHash(last.hash, node.hash), size: last.size * 2 };
    }
    this.nodes.push(node);
    this.size += 1;
  }

  root(): Uint8Array {
    if (this.nodes.length === 0) return EMPTY_ROOT;
    let root = (this.nodes.at(-1) as { hash: Uint8Array }).hash;
    for (let i = this.nodes.length - 2; i >= 0; i -= 1) root = nodeHash((this.nodes[i] as { hash: Uint8Array }).hash, root);
    return root;
  }
}

/** RFC 9162 §2.1.3.2: is `leaf` at `index` of the tree of `size` leaves whose root is `root`? */
export function verifyInclusion(index: number, size: number, leaf: Uint8Array, proof: Uint8Array[], root: Uint8Array): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      r = nodeHash(p, r);
      if (!odd(fn)) {
        while (!odd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && equalBytes(r, root);
}

/** RFC 9162 §2.1.4.2: is the tree of `second` leaves (`secondRoot`) an extension of the one of `first` (`firstRoot`)? */
export function verifyConsistency(first: number, second: number, firstRoot: Uint8Array, secondRoot: Uint8Array, proof: Uint8Array[]): boolean {
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(second) || first < 0 || first > second) return false;
  if (first === second) return proof.length === 0 && equalBytes(firstRoot, secondRoot);
  if (first === 0) return proof.length === 0 && equalBytes(firstRoot, EMPTY_ROOT);
  const path = isPowerOfTwo(first) ? [firstRoot, ...proof] : [...proof];
  if (path.length === 0) return false;
  let fn = first - 1;
  let sn = second - 1;
  while (odd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = path[0] as Uint8Array;
  let sr = fr;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && equalBytes(fr, firstRoot) && equalBytes(sr, secondRoot);
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && 2 ** Math.round(Math.log2(n)) === n;
}

/** The RFC 9162 root of a list of leaf hashes (for tests and small trees). */
export function rootOf(leaves: Uint8Array[]): Uint8Array {
  const frontier = new Frontier();
  for (const leaf of leaves) frontier.append(leaf);
  return frontier.root();
}

/** The sizes of a tree's perfect subtrees: each set bit of `size`, largest first. */
export function frontierSizes(size: number): number[] {
  const out: number[] = [];
  for (let bit = 1; bit <= size; bit *= 2) if (Math.floor(size / bit) % 2 === 1) out.unshift(bit);
  return out;
}
