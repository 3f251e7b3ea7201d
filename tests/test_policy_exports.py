"""signoff.policy's public surface is deliberate: pinned here."""

from __future__ import annotations

import signoff.policy

EXPECTED = {
    "CONSTRAINTS", "DEFAULT_SECTIONS", "Condition", "Constraints", "EffectivePolicy", "Layer",
    "PolicyFile", "PolicySource", "Problem", "ProposalChange", "Rule", "SectionCheck",
    "cedar_request", "cedar_schema", "check_policy", "document_changes", "effective_policy",
    "load_policy_file", "mandate_coverage", "mandate_digest", "mandate_policy", "parse_duration",
    "parse_policy", "pending_changes", "policy_version", "thresholds_for",
}  # fmt: skip


def test_all_is_pinned_and_sorted() -> None:
    assert set(signoff.policy.__all__) == EXPECTED  # ruff (RUF022) keeps its order
    assert len(signoff.policy.__all__) == len(EXPECTED)
    for name in signoff.policy.__all__:
        assert hasattr(signoff.policy, name)


def test_the_policy_room_imports_no_store_http_or_web() -> None:
    """LAYOUT.md: policy/ may import primitives and the catalog, not http, web or the store."""
    import ast
    from pathlib import Path

    folder = Path(signoff.policy.__file__).parent
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                assert not name.startswith(
                    ("signoff.store", "signoff.http", "signoff.web", "signoff.gate")
                ), f"{path.name} imports {name}"
