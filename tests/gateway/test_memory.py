"""The real memory MCP server behind the gateway: its knowledge-graph file is the effect checked."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from signoff import Decision, DecisionKind, ExecutionStatus, Gate, Principal, SQLiteStore
from signoff.exceptions import AlreadyConsumed, InvalidArguments
from signoff.gateway import Gateway, parse_gateway_policy
from tests.gateway.conftest import AGENT, MEMORY_SERVER, TOKEN_KEY, Upstream, proxied, require

pytestmark = pytest.mark.slow
POLICY = """
[upstreams.memory]
approver_role = "knowledge_editor"

[upstreams.memory.tools.read_graph]
kind = "read"

[upstreams.memory.tools.create_entities]
kind = "write"
side_effect = "reversible"
labels = { entities = "Entities to add" }
"""


def test_create_entities_waits_for_a_person_then_lands_once(tmp_path: Path) -> None:
    """A nested-array write: proposed (graph unchanged), approved, executed once; reads pass."""
    require(MEMORY_SERVER)
    graph = tmp_path / "memory.jsonl"
    upstream = Upstream(tmp_path / "upstream.log", tmp_path / "armed", tmp_path / "patch")
    spec = proxied("memory", MEMORY_SERVER, [], upstream, env={"MEMORY_FILE_PATH": str(graph)})
    store = SQLiteStore(tmp_path / "signoff.db")
    store.migrate()
    entity = {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}
    with Gateway([spec], parse_gateway_policy(tomllib.loads(POLICY)), store=store) as gateway:
        gate = Gate(gateway.catalog(), store, token_key=TOKEN_KEY)
        proposal = gate.propose(AGENT, "memory_create_entities", {"entities": [entity]})
        assert proposal.preview.field("entities").label == "Entities to add"  # type: ignore[union-attr]
        assert not graph.exists() or "Ada" not in graph.read_text()
        with pytest.raises(InvalidArguments) as refused:
            gate.propose(AGENT, "memory_create_entities", {"entities": [{**entity, "x": 1}]})
        assert refused.value.details["errors"][0]["loc"] == ["entities", "0"]
        editor = Principal("kim", "acme", roles=frozenset({"knowledge_editor"}))
        token = gate.decide(
            editor,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key="kim-1",
        ).confirmation_token
        assert token is not None
        result = gate.execute(AGENT, proposal.proposal_id, token)
        assert result.execution.status is ExecutionStatus.SUCCEEDED
        with pytest.raises(AlreadyConsumed):
            gate.execute(AGENT, proposal.proposal_id, token)
        read = gateway.call_read(AGENT, "memory_read_graph", {})
        assert read.structured_content is not None
        assert [e["name"] for e in read.structured_content["entities"]] == ["Ada"]
    store.close()
    lines = [json.loads(line) for line in graph.read_text().splitlines()]
    assert [line["name"] for line in lines if line.get("type") == "entity"] == ["Ada"]
    assert upstream.calls("create_entities") == 1
