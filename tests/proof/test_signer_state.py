"""The signer's state: one file per log beside the key file, atomic, locked across signers."""

from __future__ import annotations

import json
import stat
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from signoff import Gate, SQLiteStore
from signoff.cli._main import cli
from signoff.demo import DemoShop, RefundProvider, demo_catalog, seed_demo_orders
from signoff.exceptions import SignerRefused, SigningKeyError
from signoff.gate._proof import GateProof
from signoff.proof import FileSignerState, KeySet, SignedView, state_directory_for
from tests.conftest import AGENT, REFUND, TOKEN_KEY


def test_a_view_is_saved_atomically_readable_by_the_signer_only(tmp_path: Path) -> None:
    """Saved, read back in another instance; directory 0700, file 0600; a damaged file is a
    refusal with what to do, never a silent fresh start."""
    state = FileSignerState(tmp_path / "keys.json.state")
    view = SignedView("signoff.test/acme", 3, bytes(32), "ab" * 32, (bytes(32), bytes(32)), 7)
    with state.hold(view.origin) as slot:
        assert slot.view is None
        slot.save(view)
    with FileSignerState(tmp_path / "keys.json.state").hold(view.origin) as slot:
        assert slot.view == view
    assert stat.S_IMODE(state.directory.stat().st_mode) == 0o700
    [saved] = state.directory.glob("*.json")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert not list(state.directory.glob(".*.tmp"))
    saved.write_text("{not json")
    with pytest.raises(SigningKeyError, match="init-signer"), state.hold(view.origin):
        pass
    assert state_directory_for(tmp_path / "keys.json") == tmp_path / "keys.json.state"


def test_concurrent_signers_on_one_host_take_turns_and_never_go_back(tmp_path: Path) -> None:
    """Four gates (as four `serve` workers) write and checkpoint one log at once, each with its
    own handle on the state directory: no refusal, and the view ends at the newest checkpoint
    (without the lock a slower signer would save an older view over a newer one)."""
    keys = KeySet.generate()
    seed = DemoShop(str(tmp_path / "shop.db"))
    seed_demo_orders(seed)
    seed.close()
    SQLiteStore(tmp_path / "signoff.db").migrate()
    refused: list[SignerRefused] = []
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        store = SQLiteStore(tmp_path / "signoff.db")
        shop = DemoShop(str(tmp_path / "shop.db"))
        proof = GateProof(
            keys, issuer="https://signoff.test", log_name="signoff.test",
            checkpoint_events=1, signer=FileSignerState(tmp_path / "state"),
            on_refusal=refused.append,
        )  # fmt: skip
        gate = Gate(
            demo_catalog(shop, RefundProvider(shop)), store, token_key=TOKEN_KEY, proof=proof
        )
        try:
            for i in range(6):
                gate.propose(
                    AGENT, "refund_order", {**REFUND, "amount_minor": 100 + index * 10 + i}
                )
                gate.checkpoint_now()
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()
            shop.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and refused == []
    store = SQLiteStore(tmp_path / "signoff.db")
    with store.read() as tx:
        newest = tx.latest_checkpoint("acme")
        head = tx.audit_head_seq("acme")
    store.close()
    assert newest is not None and newest.size == head == 24
    with FileSignerState(tmp_path / "state").hold("signoff.test/acme") as slot:
        assert slot.view is not None and slot.view.size == head


def test_cli_checkpoint_and_init_signer(tmp_path: Path) -> None:
    """`audit checkpoint` keeps its state beside --keys; deleting it makes the next run refuse
    (exit 1, one REFUSED line); `audit init-signer` restores it, and signing resumes."""
    keys_file = tmp_path / "keys.json"
    KeySet.generate().save(keys_file)
    db = tmp_path / "signoff.db"
    store = SQLiteStore(db)
    store.migrate()
    shop = DemoShop(str(tmp_path / "shop.db"))
    seed_demo_orders(shop)
    runner = CliRunner()
    assert json.loads(keys_file.read_text())["mac_keys"]  # the gate's MAC key is in the file
    from signoff.cli._proof import cli_proof

    proof = cli_proof(str(keys_file), None, None, "test")
    gate = Gate(demo_catalog(shop, RefundProvider(shop)), store, token_key=TOKEN_KEY, proof=proof)
    gate.propose(AGENT, "refund_order", REFUND)
    args = ["audit", "checkpoint", "--db", str(db), "--keys", str(keys_file)]
    first = runner.invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert (tmp_path / "keys.json.state").is_dir()
    for file in (tmp_path / "keys.json.state").iterdir():
        file.unlink()
    gate.propose(AGENT, "refund_order", {**REFUND, "amount_minor": 5})
    refused = runner.invoke(cli, args)
    assert refused.exit_code == 1 and "REFUSED acme: [signer_state_missing]" in refused.output
    init = runner.invoke(cli, ["audit", "init-signer", "--db", str(db), "--keys", str(keys_file)])
    assert init.exit_code == 0, init.output
    assert "acme: signer initialised" in init.output
    again = runner.invoke(cli, args)
    assert again.exit_code == 0 and "acme: checkpoint at size" in again.output
    with store.read() as tx:
        kinds = [e.kind for e in tx.audit_events(tenant="acme")]
    assert kinds.count("signer.initialised") == 1 and "checkpoint.refused" in kinds
    store.close()
    shop.close()
