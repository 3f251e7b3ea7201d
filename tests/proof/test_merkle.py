"""RFC 9162 tree hashing and proofs against published Certificate Transparency vectors."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signoff.proof._merkle import (
    CompactTree,
    PartialTree,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root_hash,
    verify_consistency,
    verify_inclusion,
)

VECTORS = json.loads((Path(__file__).parent / "merkle_vectors.json").read_text())
CT: dict[str, Any] = VECTORS["ct"]
CCTV: dict[str, Any] = VECTORS["cctv"]
LEAVES = [leaf_hash(bytes.fromhex(data)) for data in CT["leaves"]]
ROOTS = [bytes.fromhex(root) for root in CT["roots"]]


def _b64(items: list[str]) -> list[bytes]:
    return [base64.b64decode(item) for item in items]


@pytest.mark.parametrize("size", range(9))
def test_ct_root_hashes(size: int) -> None:
    """MTH of the first ``size`` CT leaves equals the published root (size 0: SHA-256 of '')."""
    assert root_hash(LEAVES[:size]) == ROOTS[size]


@pytest.mark.parametrize("case", CT["inclusion"], ids=lambda c: f"{c['leaf']}-of-{c['size']}")
def test_ct_inclusion_proofs_generated_and_verified(case: dict[str, Any]) -> None:
    """PATH(m, D[n]) matches the CT vector, and the RFC 9162 verifier accepts it."""
    index, size = case["leaf"] - 1, case["size"]
    proof = [bytes.fromhex(h) for h in case["proof"]]
    assert inclusion_proof(index, LEAVES[:size]) == proof
    assert verify_inclusion(index, size, LEAVES[index], proof, ROOTS[size])


@pytest.mark.parametrize("case", CT["consistency"], ids=lambda c: f"{c['size1']}-to-{c['size2']}")
def test_ct_consistency_proofs_generated_and_verified(case: dict[str, Any]) -> None:
    """PROOF(m, D[n]) matches the CT vector, and the RFC 9162 verifier accepts it."""
    m, n = case["size1"], case["size2"]
    proof = [bytes.fromhex(h) for h in case["proof"]]
    assert consistency_proof(m, LEAVES[:n]) == proof
    assert verify_consistency(m, n, ROOTS[m], ROOTS[n], proof)


def _inclusion_corruptions(
    index: int, size: int, leaf: bytes, proof: list[bytes], root: bytes
) -> list[tuple[int, int, bytes, list[bytes], bytes]]:
    some = bytes.fromhex("abacaba0" + "00" * 26 + "1234")
    cases = [
        (index + 1, size, leaf, proof, root),
        (index ^ 2, size, leaf, proof, root),
        (index, size * 2, leaf, proof, root),
        (index, size // 2, leaf, proof, root),
        (index, size, some, proof, root),
        (index, size, leaf, proof, some),
        (index, size, leaf, [*proof, root], root),
        (index, size, leaf, [root, *proof], root),
    ]
    if index:
        cases.append((index - 1, size, leaf, proof, root))
    for i in range(len(proof)):
        flipped = [*proof]
        flipped[i] = bytes([proof[i][0] ^ 8]) + proof[i][1:]
        cases.append((index, size, leaf, flipped, root))
    if proof:
        cases.append((index, size, leaf, proof[:-1], root))
    return cases


@pytest.mark.parametrize("case", CT["inclusion"][1:], ids=lambda c: f"{c['leaf']}-of-{c['size']}")
def test_corrupted_inclusion_proofs_are_refused(case: dict[str, Any]) -> None:
    """Wrong index, size, leaf, root, an extra, missing or flipped node: all refused."""
    index, size = case["leaf"] - 1, case["size"]
    proof = [bytes.fromhex(h) for h in case["proof"]]
    for args in _inclusion_corruptions(index, size, LEAVES[index], proof, ROOTS[size]):
        assert not verify_inclusion(*args), args[:2]


@pytest.mark.parametrize(
    "case", CT["consistency"][1:], ids=lambda c: f"{c['size1']}-to-{c['size2']}"
)
def test_corrupted_consistency_proofs_are_refused(case: dict[str, Any]) -> None:
    """Wrong sizes, swapped roots, truncated, extended or flipped proofs: all refused."""
    m, n = case["size1"], case["size2"]
    proof = [bytes.fromhex(h) for h in case["proof"]]
    r1, r2 = ROOTS[m], ROOTS[n]
    bad = [
        (m - 1, n, r1, r2, proof), (m + 1, n, r1, r2, proof), (m ^ 2, n, r1, r2, proof),
        (m, n * 2, r1, r2, proof), (m, n // 2, r1, r2, proof), (m, n, r2, r1, proof),
        (m, n, r1, r2, []), (m, n, r1, r2, proof[:-1]), (m, n, r1, r2, [*proof, r1]),
        (m, n, r1, r2, [r2, *proof]), (m, n, r1, r2, [proof[0], *proof]),
    ]  # fmt: skip
    for i in range(len(proof)):
        flipped = [*proof]
        flipped[i] = bytes([proof[i][0] ^ 16]) + proof[i][1:]
        bad.append((m, n, r1, r2, flipped))
    for args in bad:
        assert not verify_consistency(*args), args[:2]


def test_cctv_tree_heads() -> None:
    """C2SP CCTV: leaf hashes of 'a'..'p' and the root after each append."""
    tree = CompactTree()
    leaves: list[bytes] = []
    for case in CCTV["tree_heads"]:
        leaf = leaf_hash(case["leaf_data"].encode())
        assert leaf == base64.b64decode(case["leaf_hash"])
        leaves.append(leaf)
        tree.append(leaf)
        assert root_hash(leaves) == tree.root() == base64.b64decode(case["root_hash"])


@pytest.mark.parametrize("case", CCTV["inclusion_valid"])
def test_cctv_valid_inclusion(case: dict[str, Any]) -> None:
    """C2SP CCTV valid inclusion proofs verify."""
    assert verify_inclusion(
        case["leaf_index"],
        case["tree_size"],
        base64.b64decode(case["leaf_hash"]),
        _b64(case["inclusion_path"]),
        base64.b64decode(case["root_hash"]),
    )


@pytest.mark.parametrize("case", CCTV["consistency_valid"])
def test_cctv_valid_consistency(case: dict[str, Any]) -> None:
    """C2SP CCTV valid consistency proofs verify (including from the empty tree)."""
    assert verify_consistency(
        case["old_size"],
        case["new_size"],
        base64.b64decode(case["old_root"]),
        base64.b64decode(case["new_root"]),
        _b64(case["consistency_path"]),
    )


@pytest.mark.parametrize("case", CCTV["consistency_invalid"])
def test_cctv_invalid_consistency(case: dict[str, Any]) -> None:
    """C2SP CCTV mutated consistency proofs are refused."""
    assert not verify_consistency(
        case["old_size"],
        case["new_size"],
        base64.b64decode(case["old_root"]),
        base64.b64decode(case["new_root"]),
        _b64(case["consistency_path"]),
    )


def test_proofs_round_trip_for_every_size_up_to_40() -> None:
    """Generated proofs verify for every leaf and every pair of sizes up to 40."""
    leaves = [leaf_hash(str(i).encode()) for i in range(40)]
    roots = [root_hash(leaves[:n]) for n in range(41)]
    for n in range(1, 41):
        for i in range(n):
            assert verify_inclusion(i, n, leaves[i], inclusion_proof(i, leaves[:n]), roots[n])
        for m in range(1, n + 1):
            assert verify_consistency(m, n, roots[m], roots[n], consistency_proof(m, leaves[:n]))


def test_compact_tree_resumes_from_its_frontier() -> None:
    """A tree rebuilt from the frontier at size m continues to the same roots."""
    leaves = [leaf_hash(bytes([i])) for i in range(23)]
    for m in range(24):
        head = CompactTree()
        for leaf in leaves[:m]:
            head.append(leaf)
        resumed = CompactTree(head.frontier(), m)
        assert resumed.root() == root_hash(leaves[:m])
        for leaf in leaves[m:]:
            resumed.append(leaf)
        assert resumed.root() == root_hash(leaves)


def test_partial_tree_proves_leaves_after_its_frontier() -> None:
    """Frontier at m plus the later leaves give the same root and audit paths as the full tree."""
    leaves = [leaf_hash(bytes([i])) for i in range(21)]
    for m in range(21):
        head = CompactTree()
        for leaf in leaves[:m]:
            head.append(leaf)
        for n in range(m + 1, 22):
            partial = PartialTree(head.frontier(), m, leaves[m:n])
            assert partial.root() == root_hash(leaves[:n])
            for i in range(m, n):
                assert partial.inclusion_proof(i) == inclusion_proof(i, leaves[:n])


@settings(max_examples=150)
@given(st.integers(1, 700), st.data())
def test_a_leaf_tree_proves_as_the_rfc_functions_do(size: int, data: st.DataObject) -> None:
    """LeafTree (subtrees kept across sizes) gives the very proofs of consistency_proof, for
    any pair of sizes, asked in any order."""
    from signoff.proof._merkle import LeafTree

    leaves = [hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(size)]
    tree = LeafTree(leaves)
    pairs = data.draw(st.lists(st.tuples(st.integers(1, size), st.integers(1, size)), max_size=8))
    for a, b in [(min(p), max(p)) for p in pairs] + [(1, size), (size, size)]:
        assert tree.consistency_proof(a, b) == consistency_proof(a, leaves[:b])
        assert tree.mth(0, b) == root_hash(leaves[:b])
