"""`suspend_account`: time arguments normalised to UTC, ambiguity asked, the shop's row written.

PROTOCOL rule 2 (seed 000): times are RFC 3339 with an offset or UTC in the canonical
arguments; a naive time or an unknown zone is a clarification, never a confirmation; the
digest never depends on how the time was written; the approver reads it in their zone.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signoff import (
    Decision,
    DecisionKind,
    ExecutionStatus,
    Principal,
    ProposalStatus,
    args_digest,
)
from signoff.demo import SuspendAccount, SuspendArgs, suspensions
from signoff.exceptions import ClarificationNeeded, InvalidArguments, StateChanged
from tests.conftest import World, make_world

SUPPORT_AGENT = Principal("sam", "acme", frozenset({"support"}), actor="agent:support-bot")
ACCOUNT_APPROVER = Principal("alice", "acme", frozenset({"account_approver"}))
PERIOD = {
    "customer": "u_42",
    "starts_at": "2026-09-01T14:20:00+08:00",
    "ends_at": "2026-09-08T14:20:00+08:00",
    "reason": "chargeback under review",
}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path)
    w.directory.grant("acme", "alice", "account_approver")
    # The requesters ask through their role, which the directory must grant (rule 11).
    w.directory.grant("acme", "sam", "support")
    w.directory.grant("globex", "sue", "support")
    yield w
    w.store.close()
    w.shop.close()


def _propose(world: World, **changes: Any) -> Any:
    return world.gate.propose(SUPPORT_AGENT, "suspend_account", {**PERIOD, **changes})


def _approve_and_run(world: World, proposal: Any) -> Any:
    decided = world.gate.decide(
        ACCOUNT_APPROVER,
        proposal.proposal_id,
        Decision(DecisionKind.APPROVE, proposal.version),
        idempotency_key="s1",
    )
    assert decided.confirmation_token is not None
    return world.gate.execute(SUPPORT_AGENT, proposal.proposal_id, decided.confirmation_token)


def test_the_suspension_is_stored_in_utc_and_runs_once(world: World) -> None:
    """+08:00 times become UTC in the canonical arguments and in the shop's row, under the
    proposal's request key; a second execute writes nothing more."""
    proposal = _propose(world)
    assert (proposal.arguments["starts_at"], proposal.arguments["ends_at"]) == (
        "2026-09-01T06:20:00Z",
        "2026-09-08T06:20:00Z",
    )
    result = _approve_and_run(world, proposal)
    assert result.execution.status is ExecutionStatus.SUCCEEDED
    assert result.receipt is not None
    assert suspensions(world.shop, "acme", "u_42") == [
        (
            proposal.request_key,
            "2026-09-01T06:20:00Z",
            "2026-09-08T06:20:00Z",
            result.receipt.provider_reference,
        )
    ]
    assert world.gate.proposal(SUPPORT_AGENT, proposal.proposal_id).status is (
        ProposalStatus.SUCCEEDED
    )


def test_the_preview_shows_each_time_in_the_approvers_zone_with_its_offset(world: World) -> None:
    """acme's approvers work in Asia/Shanghai: UTC machine values, +08:00 display values."""
    proposal = _propose(world, starts_at="2026-09-01T06:20:00Z", ends_at="2026-09-02 00:00Z")
    starts, ends = proposal.preview.field("starts_at"), proposal.preview.field("ends_at")
    assert starts is not None and ends is not None
    assert (starts.machine_value, starts.display_value) == (
        "2026-09-01T06:20:00Z",
        "2026-09-01 14:20:00 +08:00",
    )
    assert ends.display_value == "2026-09-02 08:00:00 +08:00"
    assert starts.unit == "UTC (RFC 3339); shown in Asia/Shanghai"
    assert "17 hours 40 minutes" in proposal.preview.impact


def test_another_tenants_approvers_read_their_own_zone(world: World) -> None:
    """globex's approvers work in Europe/Berlin: the same instant reads +02:00 in summer."""
    globex = Principal("sue", "globex", frozenset({"support"}), actor="agent:support-bot")
    proposal = world.gate.propose(globex, "suspend_account", {**PERIOD, "customer": "u_77"})
    starts = proposal.preview.field("starts_at")
    assert starts is not None and starts.display_value == "2026-09-01 08:20:00 +02:00"


@pytest.mark.parametrize(
    ("written", "asked"),
    [
        ("2026-09-01T14:20:00", "names no time zone"),
        ("2026-09-01 14:20", "names no time zone"),
        ("2026-09-01", "no time of day"),
        ("next tuesday at 2pm", "not a date and time"),
        ("2026-09-01T14:20:00[CST]", "not an IANA zone"),
        ("2026-09-01T14:20:00[Mars/Olympus_Mons]", "not an IANA zone"),
        ("2026-09-01T14:20:00+09:00[Asia/Shanghai]", "is not Asia/Shanghai's"),
        ("2026-11-01T01:30:00[America/New_York]", "happens twice"),
        ("2026-03-08T02:30:00[America/New_York]", "does not exist"),
    ],
)
def test_a_time_that_names_no_single_instant_is_a_question(
    world: World, written: str, asked: str
) -> None:
    """Naive, date-only, words, abbreviations, unknown zones, disagreeing offsets and wall
    times a zone skips or repeats: ClarificationNeeded naming the field; nothing stored."""
    with pytest.raises(ClarificationNeeded, match=asked) as clarify:
        _propose(world, starts_at=written)
    assert clarify.value.details["field"] == "starts_at"
    assert world.gate.proposals(SUPPORT_AGENT) == []
    with world.store.read() as tx:
        assert tx.audit_events() == []


def test_a_period_that_does_not_go_forward_is_refused(world: World) -> None:
    """The end at or before the start, or longer than 366 days: invalid_arguments."""
    with pytest.raises(InvalidArguments, match="after starts_at"):
        _propose(world, ends_at="2026-09-01T06:20:00Z")  # the same instant as the start
    with pytest.raises(InvalidArguments, match="366 days"):
        _propose(world, ends_at="2027-09-03T14:20:00+08:00")
    with pytest.raises(InvalidArguments, match="not a real date"):
        _propose(world, starts_at="2026-02-30T10:00:00Z")


def test_a_suspension_added_meanwhile_stops_the_write(world: World) -> None:
    """Another suspension of the customer lands between approval and execution: the state
    moved, so nothing is written for this proposal (state_changed)."""
    later = {"starts_at": "2026-10-01T00:00:00Z", "ends_at": "2026-10-02T00:00:00Z"}
    first, second = _propose(world), _propose(world, **later)
    token = world.gate.decide(
        ACCOUNT_APPROVER,
        second.proposal_id,
        Decision(DecisionKind.APPROVE, second.version),
        idempotency_key="s2",
    ).confirmation_token
    _approve_and_run(world, first)
    assert token is not None
    with pytest.raises(StateChanged):
        world.gate.execute(SUPPORT_AGENT, second.proposal_id, token)
    assert [row[0] for row in suspensions(world.shop, "acme", "u_42")] == [first.request_key]


# How a time was written never changes the digest -----------------------------------------

ZONES = ("Asia/Shanghai", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "UTC")


def _writings(moment: datetime, offset_minutes: int, zone: str) -> list[str]:
    """The same instant as a model may write it: Z, +00:00, another offset, a zone."""
    fixed = moment.astimezone(timezone(timedelta(minutes=offset_minutes)))
    local = moment.astimezone(ZoneInfo(zone))
    out = [
        moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        moment.strftime("%Y-%m-%d %H:%M:%S+00:00"),
        fixed.isoformat(),
        fixed.isoformat().replace("T", " ").lower(),
        local.isoformat() + f"[{zone}]",
    ]
    if moment.second == 0:
        out.append(moment.strftime("%Y-%m-%dT%H:%MZ"))
    early, late = local.replace(fold=0), local.replace(fold=1)
    if early.utcoffset() == late.utcoffset():  # a wall time the zone shows once
        out.append(local.replace(tzinfo=None).isoformat() + f"[{zone}]")
    return out


@settings(max_examples=150, deadline=None)
@given(
    moment=st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC)
    ).map(lambda d: d.replace(microsecond=0)),
    offset_minutes=st.integers(-14 * 4, 14 * 4).map(lambda q: q * 15),
    zone=st.sampled_from(ZONES),
)
def test_the_digest_never_depends_on_how_a_time_was_written(
    moment: datetime, offset_minutes: int, zone: str
) -> None:
    """Every writing of one instant normalises to one canonical form and one digest."""
    tool = SuspendAccount.__new__(SuspendAccount)  # normalize reads no shop
    end = (moment + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    forms, digests = set(), set()
    for written in _writings(moment, offset_minutes, zone):
        args = SuspendArgs(customer="u_42", starts_at=written, ends_at=end, reason=None)
        normalized = tool.normalize(args, SUPPORT_AGENT)
        assert isinstance(normalized, SuspendArgs), (written, normalized)
        forms.add(normalized.starts_at)
        digests.add(args_digest("suspend_account", "1", tool.canonical(normalized)))
    assert forms == {moment.strftime("%Y-%m-%dT%H:%M:%SZ")}
    assert len(digests) == 1
