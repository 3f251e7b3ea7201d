"""A real, independently written C2SP witness (aics-witness, from PyPI) cosigns our checkpoints.

The witness runs as its own process from its own virtual environment (it declares
Python >= 3.12; `.ci/run` installs it with --ignore-requires-python). The gate
submits each checkpoint with the tlog-witness protocol, resynchronises on 409,
keeps the cosignature lines with the checkpoint and ships them in bundles and
receipts; the verifier requires them from the pinned witness key. A fork of
the log, signed with the log's own key, is refused by the witness, and a
verifier that requires a cosignature refuses the fork's checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from signoff import Gate
from signoff.demo import demo_catalog
from signoff.gate._proof import GateProof
from signoff.proof import (
    Checkpoint,
    CompactTree,
    FileSignerState,
    KeySet,
    PublicKeys,
    TrustRoot,
    Witness,
    leaf_hash,
    parse_vkey,
    sign_checkpoint,
    verify_bundle,
    verify_receipt,
)
from signoff.proof._note import note_vkey
from signoff.proof._witness import WitnessConflict, WitnessRefused, submit
from tests.conftest import AGENT, ISSUER, REFUND, TOKEN_KEY
from tests.proof.conftest import Log, refund_flow
from tests.serving import free_port
from tests.test_store_contract import Backend, backend_for

ROOT = Path(__file__).resolve().parents[2]
WITNESS_NAME = "witness.test/w1"


def _witness_command() -> Path:
    configured = os.environ.get("SIGNOFF_TEST_AICS_WITNESS")
    command = Path(configured) if configured else ROOT / ".venv-witness" / "bin" / "aics-witness"
    if not command.exists():
        message = f"aics-witness not installed at {command} (see .ci/run)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return command


@dataclasses.dataclass
class RunningWitness:
    url: str
    vkey: str
    process: subprocess.Popen[str]


@pytest.fixture
def keys() -> KeySet:
    return KeySet.generate(now=1_767_225_600)


@pytest.fixture
def witness(tmp_path: Path, keys: KeySet) -> Iterator[RunningWitness]:
    command = _witness_command()
    config = tmp_path / "witness" / "witness.json"
    config.parent.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WITNESS_")}
    init = subprocess.run(
        [str(command), "init", "--config", str(config), "--name", WITNESS_NAME,
         "--listen", f"127.0.0.1:{port}"],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    vkey = init.stdout.strip().splitlines()[-1]
    origin = "signoff.test/acme"
    log_vkey = note_vkey(origin, keys.note_key().public_bytes_raw())
    subprocess.run(
        [str(command), "add-log", "--config", str(config), "--origin", origin, "--vkey", log_vkey],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    output = tmp_path / "witness" / "serve.log"
    with output.open("w") as log_file:
        process = subprocess.Popen(
            [str(command), "serve", "--config", str(config)],
            stdout=log_file, stderr=subprocess.STDOUT, text=True, env=env,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            _wait(url, process, output)
            yield RunningWitness(url, vkey, process)
        finally:
            process.terminate()
            process.wait(timeout=10)


def _wait(url: str, process: subprocess.Popen[str], output: Path) -> None:
    import time

    for _ in range(200):
        if process.poll() is not None:
            raise AssertionError(f"aics-witness exited: {output.read_text()}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("aics-witness did not start")


def _gate(backend: Backend, keys: KeySet, state: Path, witness: RunningWitness) -> Gate:
    proof = GateProof(
        keys, issuer=ISSUER, log_name="signoff.test", token_form="signed",
        signer=FileSignerState(state),
        witnesses=(Witness(witness.url, parse_vkey(witness.vkey)),),
    )  # fmt: skip
    return Gate(
        demo_catalog(backend.shop, backend.provider), backend.store, token_key=TOKEN_KEY,
        clock=backend.clock, directory=backend.directory, proof=proof,
    )  # fmt: skip


def _refund(backend: Backend, gate: Gate, order: str, amount: int) -> str:
    proposal = gate.propose(
        AGENT, "refund_order", {**REFUND, "order_id": order, "amount_minor": amount}
    )
    token = backend.approve(gate, proposal, key=f"k-{order}")
    result = gate.execute(AGENT, proposal.proposal_id, token)
    assert result.signed_receipt is not None
    return result.signed_receipt


def test_a_real_witness_cosigns_and_the_verifier_requires_it(
    tmp_path: Path, keys: KeySet, witness: RunningWitness
) -> None:
    """Cosigned on every checkpoint (a 409 resynchronised), kept, shipped, required."""
    with backend_for("sqlite", tmp_path) as backend:
        backend.clock.set(backend.clock.now().replace(year=2026, month=6))
        gate = _gate(backend, keys, tmp_path / "state", witness)
        receipt = _refund(backend, gate, "ord_1001", 19900)
        proof = gate.proof
        assert proof is not None
        proof.state.witnessed.clear()
        proof.state.witnessed[(WITNESS_NAME, "signoff.test/acme")] = 1  # wrong: a 409 follows
        _refund(backend, gate, "ord_1002", 5000)
        with backend.store.read() as tx:
            stored = tx.checkpoints("acme")
        assert stored and all(len(c.cosignatures) == 1 for c in stored)
        bundle = json.loads(json.dumps(gate.export_bundle("acme")))
    trust = TrustRoot(
        PublicKeys(keys.public_jwks()), frozenset({"signoff.test/acme"}),
        (parse_vkey(witness.vkey),), 1,
    )  # fmt: skip
    report = verify_bundle(bundle, trust)
    assert report.ok, report.findings
    assert WITNESS_NAME in report.cosigned_by and report.signed_at is not None
    receipt_report = verify_receipt(receipt, trust)
    assert receipt_report.ok, receipt_report.findings
    assert WITNESS_NAME in receipt_report.cosigned_by
    stripped = {
        **bundle,
        "checkpoints": [c.split("\u2014 " + WITNESS_NAME)[0] for c in bundle["checkpoints"]],
    }
    assert "cosignatures_missing" in {f.code for f in verify_bundle(stripped, trust).findings}


def test_the_witness_refuses_a_fork_and_the_verifier_refuses_its_checkpoint(
    tmp_path: Path, keys: KeySet, witness: RunningWitness
) -> None:
    """The log's key signs a second history of the same size: the witness, which cosigned the
    first, will not cosign it; without its cosignature the verifier refuses the fork."""
    cosigner = Witness(witness.url, parse_vkey(witness.vkey))
    honest, fork = Log(tenant="acme"), Log(tenant="acme")
    refund_flow(honest, "prp_1")
    refund_flow(fork, "prp_1", approver="mallory")
    notes = []
    for log in (honest, fork):
        tree = CompactTree()
        for event in log.events:
            tree.append(leaf_hash(bytes.fromhex(event.hash)))
        body = Checkpoint("signoff.test/acme", tree.size, tree.root())
        notes.append(sign_checkpoint(keys.note_key(), body, timestamp=1_767_225_700))
    lines = submit(cosigner, notes[0], 0, [])
    assert lines and lines[0].startswith("\u2014 " + WITNESS_NAME + " ")
    with pytest.raises(WitnessConflict) as conflict:
        submit(cosigner, notes[1], 0, [])
    assert conflict.value.size == 5
    with pytest.raises(WitnessRefused):
        submit(cosigner, notes[1], 5, [])
    from signoff.proof import build_bundle

    bundle = build_bundle(
        tenant="acme", origin="signoff.test/acme", events=fork.events,
        checkpoints=[(5, notes[1])], jwks={},
    )  # fmt: skip
    trust = TrustRoot(
        PublicKeys(keys.public_jwks()), witnesses=(cosigner.cosigner,), witness_quorum=1
    )
    assert {f.code for f in verify_bundle(bundle, trust).findings} == {"cosignatures_missing"}
    cosigned = notes[0] + "".join(f"{line}\n" for line in lines)
    held = verify_bundle(bundle, trust, held=[cosigned])
    assert "fork_detected" in {f.code for f in held.findings}
