"""Chat identity links and message copies behave alike on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest

from signoff import Principal
from signoff.channels import IdentityLinks
from signoff.exceptions import LinkCodeInvalid, NotLinked
from signoff.store._sql import ChannelMessage
from tests.test_store_contract import Backend, backend  # noqa: F401 - the fixture

ALICE = Principal("alice", "acme", roles=frozenset({"refund_approver"}))


def test_a_code_links_once_within_its_window(backend: Backend) -> None:  # noqa: F811
    """Completed once by a person of the workspace's tenant; used or late codes refused."""
    links = IdentityLinks(backend.store, backend.clock)
    code = links.start("slack", "T1", "U1", "acme")
    with pytest.raises(NotLinked):
        links.principal("slack", "T1", "U1", surface="slack")
    with pytest.raises(LinkCodeInvalid):
        links.complete(code, Principal("gina", "globex", roles=frozenset({"refund_approver"})))
    link = links.complete(code, ALICE)
    assert (link.subject, link.roles, link.linked_by) == ("alice", ("refund_approver",), "sign-in")
    with pytest.raises(LinkCodeInvalid):
        links.complete(code, ALICE)
    person = links.principal("slack", "T1", "U1", surface="slack")
    assert (person.subject, person.tenant, person.client) == ("alice", "acme", "slack")
    late = links.start("slack", "T1", "U2", "acme")
    backend.clock.advance(timedelta(minutes=10))
    with pytest.raises(LinkCodeInvalid):
        links.complete(late, ALICE)
    with backend.store.read() as tx:
        linked = [e for e in tx.audit_events() if e.kind == "channel.linked"]
    assert len(linked) == 1 and linked[0].payload()["how"] == "sign-in"
    assert code not in str(linked[0].payload())


def test_admin_links_and_unlinks_are_audited(backend: Backend) -> None:  # noqa: F811
    """An admin's entry has no expiry; unlinking stops the next click."""
    links = IdentityLinks(backend.store, backend.clock)
    links.link("slack", "T1", "U9", ALICE, by="olga")
    backend.clock.advance(timedelta(days=400))
    assert links.principal("slack", "T1", "U9", surface="slack").subject == "alice"
    assert links.unlink("slack", "T1", "U9", by="olga") is True
    assert links.unlink("slack", "T1", "U9", by="olga") is False
    with pytest.raises(NotLinked):
        links.principal("slack", "T1", "U9", surface="slack")
    with backend.store.read() as tx:
        kinds = [e.kind for e in tx.audit_events()]
    assert kinds.count("channel.linked") == 1 and kinds.count("channel.unlinked") == 1


def test_one_message_copy_per_conversation(backend: Backend) -> None:  # noqa: F811
    """A redelivered post records no second copy of the same conversation."""
    copy = ChannelMessage("slack", "acme", "prop_1", "T1", "DU1", "1.0001", "U1", 1)
    with backend.store.transaction() as tx:
        assert tx.add_channel_message(copy) is True
        assert tx.add_channel_message(copy) is False
    with backend.store.read() as tx:
        assert tx.channel_messages("slack", "prop_1") == [copy]


def test_delegations_read_alike_on_both_stores(backend: Backend) -> None:  # noqa: F811
    from signoff.identity import StoreRoleDirectory

    directory = StoreRoleDirectory(backend.store, mode="grants", clock=backend.clock)
    directory.grant("acme", "alice", "refund_approver", by="olga")
    now = backend.clock.now()
    made = directory.delegate(
        "acme", "alice", "bob", "refund_approver",
        starts_at=now, ends_at=now + timedelta(hours=1), by="alice",
    )  # fmt: skip
    assert directory.delegator_of("acme", "bob", "refund_approver") == "alice"
    assert directory.holds_role("acme", "bob", "refund_approver")
    backend.clock.advance(timedelta(hours=1))
    assert not directory.holds_role("acme", "bob", "refund_approver")
    assert directory.end_delegation("acme", made.delegation_id, by="alice") is True
    assert [d.ended_at is not None for d in directory.delegations("acme")] == [True]
