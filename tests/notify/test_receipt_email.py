"""People keep their own copy (issue 22): the signed receipt e-mailed to the approvers and the
requester, and downloaded from the API and the page — each copy verifies offline.

The SMTP server is the suite's local stand-in (aiosmtpd on loopback); the verifier is the
`signoff audit verify --receipt FILE --trust FILE` a person runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signoff import ManualClock
from signoff.notify import AddressBook, EmailChannel, NotifyConfig
from signoff.notify._config import ConfigError
from signoff.notify._receipts import ReceiptEmailChannel
from signoff.proof import PublicKeys, TrustRoot
from tests.conftest import AGENT, APPROVER, World, make_world
from tests.notify.conftest import notifier_for
from tests.notify.test_email import Inbox

BOOK = AddressBook(
    roles={"acme": {"refund_approver": ["alice@acme.test", "bob@acme.test"]}},
    people={"acme": {"alice": "alice@acme.test", "bob": "bob@acme.test", "u_42": "u42@acme.test"}},
)


@pytest.fixture
def smtp(free_tcp_port: int) -> Iterator[tuple[Inbox, int]]:
    """The local SMTP stand-in (aiosmtpd), as tests/notify/test_email.py runs it."""
    from aiosmtpd.controller import Controller

    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_tcp_port)
    controller.start()
    try:
        yield inbox, free_tcp_port
    finally:
        controller.stop()


@pytest.fixture
def signing_world(tmp_path: Path) -> Iterator[World]:
    """A deployment that signs receipts (the signed token form carries a key set)."""
    world = make_world(tmp_path, token_form="signed")
    yield world
    world.store.close()
    world.shop.close()


def _refund(world: World) -> str:
    proposal = world.propose()
    token = world.approve(proposal)
    return world.gate.execute(AGENT, proposal.proposal_id, token).execution.execution_id


def _verify(tmp_path: Path, world: World, document: Any) -> subprocess.CompletedProcess[str]:
    """What the person runs on their copy, with the trust file the deployment publishes."""
    assert world.gate.proof is not None
    trust = tmp_path / "trust.json"
    trust.write_text(json.dumps(TrustRoot(PublicKeys(world.gate.proof.keys.public_jwks()))
                                .to_document()))  # fmt: skip
    receipt = tmp_path / "mine.json"
    receipt.write_text(document if isinstance(document, str) else json.dumps(document))
    return subprocess.run(
        [sys.executable, "-m", "signoff", "audit", "verify", "--receipt", str(receipt),
         "--trust", str(trust)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_the_approver_and_the_requester_get_the_signed_receipt_by_e_mail(
    signing_world: World, smtp: tuple[Inbox, int], clock: ManualClock, tmp_path: Path
) -> None:
    """After the refund ran, alice (who approved) and u_42 (for whom it was asked) receive one
    message with `receipt-<execution>.json`; the attachment verifies offline, exit 0."""
    inbox, port = smtp
    mail = ReceiptEmailChannel(
        "mail", receipts=signing_world.gate.signed_receipt_for, host="127.0.0.1", port=port,
        sender="signoff@acme.test", recipients=BOOK,
    )  # fmt: skip
    notifier = notifier_for(signing_world, mail, clock=clock)
    notifier.run_once()
    execution_id = _refund(signing_world)
    assert notifier.run_once() == 1
    ((to, message),) = inbox.messages
    assert to == ["alice@acme.test", "u42@acme.test"]  # bob did not approve it
    [attachment] = [part for part in message.walk() if part.get_filename()]
    assert attachment.get_filename() == f"receipt-{execution_id}.json"
    payload = attachment.get_payload(decode=True)
    assert isinstance(payload, bytes)
    checked = _verify(tmp_path, signing_world, payload.decode())
    assert checked.returncode == 0 and "verified" in checked.stdout, checked.stderr
    document = json.loads(payload)
    forged = {**document, "signed_receipt": document["signed_receipt"][:-4] + "AAAA"}
    assert _verify(tmp_path, signing_world, forged).returncode == 1


def test_receipts_in_the_notify_config_need_the_signing_keys(smtp: tuple[Inbox, int]) -> None:
    """`receipts = true` without a way to sign is refused when the notifier starts."""
    _, port = smtp
    config = NotifyConfig.model_validate(
        {"email": {"host": "127.0.0.1", "port": port, "sender": "s@acme.test", "receipts": True}}
    )
    with pytest.raises(ConfigError, match="signing keys"):
        config.channels({})
    channels = config.channels({}, receipts=lambda tenant, proposal, execution: None)
    assert [type(c) for c in channels] == [EmailChannel, ReceiptEmailChannel]


def test_the_receipt_downloads_from_the_api_and_the_page(
    signing_world: World, tmp_path: Path
) -> None:
    """`GET /v1/executions/{id}/receipt` and the page's link give the same file, as an
    attachment, to anyone in the circle; it verifies offline; before it exists, 404."""
    from tests.http.conftest import auth, make_app

    execution_id = _refund(signing_world)
    with TestClient(make_app(signing_world)) as client:
        answer = client.get(f"/v1/executions/{execution_id}/receipt", headers=auth(APPROVER))
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-disposition"] == (
            f'attachment; filename="receipt-{execution_id}.json"'
        )
        checked = _verify(tmp_path, signing_world, answer.text)
        assert checked.returncode == 0, checked.stderr
        missing = client.get("/v1/executions/exe_nope/receipt", headers=auth(APPROVER))
        assert missing.status_code == 404


def test_the_result_page_offers_the_signed_receipt(signing_world: World, tmp_path: Path) -> None:
    """alice's page of the refund links the signed receipt; following it downloads the file,
    which verifies offline."""
    from tests.web.conftest import BASE, Pages, make_pages_app

    proposal = signing_world.propose()
    token = signing_world.approve(proposal)
    signing_world.gate.execute(AGENT, proposal.proposal_id, token)
    with TestClient(make_pages_app(signing_world), base_url=BASE) as client:
        pages = Pages(client.app, client, signing_world)  # type: ignore[arg-type]
        pages.sign_in(APPROVER)
        page = client.get(f"/ui/proposals/{proposal.proposal_id}/result")
        assert page.status_code == 200
        link = page.text.split('id="signed-receipt" href="', 1)[1].split('"', 1)[0]
        download = client.get(link)
        assert download.status_code == 200
        assert download.headers["content-disposition"].startswith("attachment; ")
        assert _verify(tmp_path, signing_world, download.text).returncode == 0
