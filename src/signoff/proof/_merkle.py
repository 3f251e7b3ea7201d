"""RFC 9162 (Certificate Transparency v2) Merkle tree hashing and proofs.

Written from RFC 9162 section 2.1 rather than taken from a library: the RFC's
algorithms are a few dozen lines, and the Python packages that exist
(``pymerkle``) use their own proof format and storage model, not the RFC's
audit paths, so transparency-log tooling could not read their proofs.
``tests/proof/test_merkle.py`` checks every function against published CT
test vectors.

A leaf's hash is ``SHA-256(0x00 || data)``; an interior node's is
``SHA-256(0x01 || left || right)``; the root of ``n`` leaves splits at the
largest power of two smaller than ``n``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly smaller than ``n`` (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def root_hash(leaves: Sequence[bytes]) -> bytes:
    """MTH(D[n]) over leaf *hashes* (RFC 9162 2.1.1)."""
    if not leaves:
        return EMPTY_ROOT
    if len(leaves) == 1:
        return leaves[0]
    k = _split(len(leaves))
    return node_hash(root_hash(leaves[:k]), root_hash(leaves[k:]))


def inclusion_proof(index: int, leaves: Sequence[bytes]) -> list[bytes]:
    """PATH(m, D[n]) (RFC 9162 2.1.3.1): the audit path of leaf ``index``."""
    if not 0 <= index < len(leaves):
        raise ValueError("leaf index outside the tree")
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*inclusion_proof(index, leaves[:k]), root_hash(leaves[k:])]
    return [*inclusion_proof(index - k, leaves[k:]), root_hash(leaves[:k])]


def consistency_proof(old_size: int, leaves: Sequence[bytes]) -> list[bytes]:
    """PROOF(m, D[n]) (RFC 9162 2.1.4.1) for ``0 < old_size <= len(leaves)``."""
    if not 0 < old_size <= len(leaves):
        raise ValueError("a consistency proof needs 0 < old size <= new size")
    return _subproof(old_size, leaves, start=True)


def _subproof(m: int, leaves: Sequence[bytes], *, start: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if start else [root_hash(leaves)]
    k = _split(n)
    if m <= k:
        return [*_subproof(m, leaves[:k], start=start), root_hash(leaves[k:])]
    return [*_subproof(m - k, leaves[k:], start=False), root_hash(leaves[:k])]


def verify_inclusion(
    index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes
) -> bool:
    """RFC 9162 2.1.3.2: does ``proof`` place ``leaf`` at ``index`` under ``root``?"""
    if not 0 <= index < size or not _sized(leaf, root, *proof):
        return False
    fn, sn = index, size - 1
    r = leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """RFC 9162 2.1.4.2: is the tree of ``new_size`` an append-only extension of the old?"""
    if not 0 <= old_size <= new_size or not _sized(old_root, new_root, *proof):
        return False
    if old_size == new_size:
        return not proof and old_root == new_root
    if old_size == 0:
        return not proof and old_root == EMPTY_ROOT  # the empty tree prefixes every tree
    if not proof:
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # a power of two: the old root is the first node
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == old_root and sr == new_root and sn == 0


def _sized(*hashes: bytes) -> bool:
    return all(len(h) == HASH_SIZE for h in hashes)


class CompactTree:
    """An append-only tree kept as its perfect subtrees: O(log n) memory, root at any size.

    A verifier walks millions of events once and reads the root at every
    checkpoint size on the way, without rebuilding the tree each time.
    """

    def __init__(self, frontier: Sequence[bytes] = (), size: int = 0) -> None:
        sizes = [1 << bit for bit in reversed(range(size.bit_length())) if size >> bit & 1]
        if len(sizes) != len(frontier):
            raise ValueError("the frontier does not match the tree size")
        self._stack: list[tuple[int, bytes]] = list(zip(sizes, frontier, strict=True))
        self.size = size

    def append(self, leaf: bytes) -> None:
        self._stack.append((1, leaf))
        self.size += 1
        while len(self._stack) > 1 and self._stack[-1][0] == self._stack[-2][0]:
            (count, right), (_, left) = self._stack.pop(), self._stack.pop()
            self._stack.append((count * 2, node_hash(left, right)))

    def frontier(self) -> list[bytes]:
        """The perfect subtrees' hashes, largest first: enough to go on appending."""
        return [h for _, h in self._stack]

    def root(self) -> bytes:
        if not self._stack:
            return EMPTY_ROOT
        result = self._stack[-1][1]
        for _, h in reversed(self._stack[:-1]):
            result = node_hash(h, result)
        return result


def _subtree_sizes(size: int) -> list[int]:
    return [1 << bit for bit in reversed(range(size.bit_length())) if size >> bit & 1]


class PartialTree:
    """A tree known by its frontier at size ``m`` and the leaves after it.

    Enough to prove the inclusion of any leaf at index ``>= m`` in the tree of
    ``m + len(leaves)``: every audit-path node is either inside the new range
    or a union of the frontier's aligned subtrees. A signed receipt needs only
    the events since the checkpoint before its proposal, not the whole log.
    """

    def __init__(self, frontier: Sequence[bytes], m: int, leaves: Sequence[bytes]) -> None:
        if len(frontier) != len(_subtree_sizes(m)):
            raise ValueError("the frontier does not match the tree size")
        self._m, self._leaves = m, list(leaves)
        self._known: dict[tuple[int, int], bytes] = {}
        start = 0
        for size, digest in zip(_subtree_sizes(m), frontier, strict=True):
            self._known[(start, size)] = digest
            start += size
        self.size = m + len(self._leaves)

    def _mth(self, a: int, b: int) -> bytes:
        known = self._known.get((a, b - a))
        if known is not None:
            return known
        if a >= self._m:
            return root_hash(self._leaves[a - self._m : b - self._m])
        if b - a == 1:
            raise ValueError("a leaf before the frontier is not known")
        k = _split(b - a)
        return node_hash(self._mth(a, a + k), self._mth(a + k, b))

    def root(self) -> bytes:
        return self._mth(0, self.size) if self.size else EMPTY_ROOT

    def inclusion_proof(self, index: int) -> list[bytes]:
        if not self._m <= index < self.size:
            raise ValueError("only leaves after the frontier can be proven")
        return self._path(index, 0, self.size)

    def _path(self, i: int, a: int, b: int) -> list[bytes]:
        if b - a == 1:
            return []
        k = _split(b - a)
        if i < a + k:
            return [*self._path(i, a, a + k), self._mth(a + k, b)]
        return [*self._path(i, a + k, b), self._mth(a, a + k)]

    def consistency_proof(self) -> list[bytes]:
        """PROOF(m, D[size]) from the frontier's size ``m``: the nodes it needs are the
        frontier's subtrees or lie in the new range (RFC 9162 2.1.4.1, over ranges)."""
        if not 0 < self._m <= self.size:
            raise ValueError("a consistency proof needs 0 < old size <= new size")
        return self._subproof(self._m, 0, self.size, start=True)

    def _subproof(self, m: int, a: int, b: int, *, start: bool) -> list[bytes]:
        if m == b - a:
            return [] if start else [self._mth(a, b)]
        k = _split(b - a)
        if m <= k:
            return [*self._subproof(m, a, a + k, start=start), self._mth(a + k, b)]
        return [*self._subproof(m - k, a + k, b, start=False), self._mth(a, a + k)]


class LeafTree:
    """Proofs for many tree sizes over one list of leaf hashes, each subtree hashed once.

    A bundle proves every checkpoint consistent with the next: with the functions above each
    proof rehashes the tree up to its size, O(n) per checkpoint and O(n²/64) for a log
    checkpointed every 64 events. The perfect subtrees a proof needs are the same in every
    larger tree (they start at a multiple of their size), so their hashes are kept — those
    of 64 leaves or more; smaller ones cost less to hash again than to keep.
    """

    KEEP = 64

    def __init__(self, leaves: Sequence[bytes]) -> None:
        self._leaves = leaves
        self._perfect: dict[tuple[int, int], bytes] = {}

    def mth(self, a: int, b: int) -> bytes:
        """MTH(leaves[a:b]) for a range the RFC's recursion reaches (``a`` aligned)."""
        n = b - a
        if n <= 1:
            return self._leaves[a] if n == 1 else EMPTY_ROOT
        keep = n >= self.KEEP and n & (n - 1) == 0
        if keep:
            known = self._perfect.get((a, n))
            if known is not None:
                return known
        k = _split(n)
        digest = node_hash(self.mth(a, a + k), self.mth(a + k, b))
        if keep:
            self._perfect[(a, n)] = digest
        return digest

    def consistency_proof(self, old_size: int, new_size: int) -> list[bytes]:
        """:func:`consistency_proof` of ``old_size`` in the tree of the first ``new_size``."""
        if not 0 < old_size <= new_size <= len(self._leaves):
            raise ValueError("a consistency proof needs 0 < old size <= new size")
        return self._subproof(old_size, 0, new_size, start=True)

    def _subproof(self, m: int, a: int, b: int, *, start: bool) -> list[bytes]:
        if m == b - a:
            return [] if start else [self.mth(a, b)]
        k = _split(b - a)
        if m <= k:
            return [*self._subproof(m, a, a + k, start=start), self.mth(a + k, b)]
        return [*self._subproof(m - k, a + k, b, start=False), self.mth(a, a + k)]
