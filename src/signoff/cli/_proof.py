"""`signoff keys …`, `signoff token verify` and the proof halves of `signoff audit …`.

Keys come from their file; tokens, bundles and receipts are checked with
``signoff.proof`` and a trust root the reader brings (``--trust`` or
``--jwks``), never with keys that travel with what is verified.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from signoff._clock import SystemClock, to_micros
from signoff.exceptions import (
    InvalidRequest,
    NoTrustRoot,
    ProofFormatError,
    Refusal,
    SignerRefused,
    SigningKeyError,
)
from signoff.proof import (
    KEYS_FILE_ENV,
    STATE_ENV,
    Expectation,
    FileSignerState,
    KeySet,
    PublicKeys,
    Report,
    TrustRoot,
    keyset_from_environment,
    load_keyset,
    parse_vkey,
    read_receipt_file,
    state_directory_for,
    verify_bundle,
    verify_confirmation,
    verify_receipt,
)
from signoff.proof._note import NoteRejected
from signoff.proof._witness import WITNESSES_ENV, parse_witnesses

if TYPE_CHECKING:
    from signoff.gate._gate import Gate
    from signoff.gate._proof import GateProof
    from signoff.store import Store

ALG = click.Choice(["EdDSA", "ES256"])
KEEP_PRIVATE_ENV = "SIGNOFF_KEEP_RETIRED_PRIVATE_KEYS"
KEYS_OPTION = click.option(
    "--keys",
    "keys_file",
    envvar=KEYS_FILE_ENV,
    required=True,
    type=click.Path(dir_okay=False),
    help=f"The signing key file (env {KEYS_FILE_ENV}).",
)


def _now() -> int:
    return to_micros(SystemClock().now()) // 1_000_000


@click.group()
def keys() -> None:
    """Signing keys: a JWK set file with private keys, one active kid; never in the database."""


@keys.command("generate")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False))
@click.option("--alg", default="EdDSA", type=ALG, show_default=True)
def keys_generate(out: str, alg: str) -> None:
    """Write a new key file (mode 0600) holding one active key and an audit MAC key."""
    if Path(out).exists():
        raise SigningKeyError(
            f"{out} already exists — rotate it with `signoff keys rotate --keys {out}`"
        )
    keyset = KeySet.generate(alg, now=_now())
    keyset.save(out)
    click.echo(f"wrote {out}: active key {keyset.active} ({alg}), log name {keyset.log_name}")


@keys.command("rotate")
@KEYS_OPTION
@click.option("--alg", default="EdDSA", type=ALG, show_default=True)
@click.option(
    "--keep-retired-private",
    is_flag=True,
    envvar=KEEP_PRIVATE_ENV,
    help=f"Keep the retired keys' private parts in the file (env {KEEP_PRIVATE_ENV}); "
    "they still can never sign again.",
)
def keys_rotate(keys_file: str, alg: str, keep_retired_private: bool) -> None:
    """A new active key; the keys it replaces are retired now and can never sign again."""
    before = load_keyset(keys_file)
    keyset = before.rotated(alg, now=_now(), keep_private=keep_retired_private)
    keyset.save(keys_file)
    unretired = sum(1 for k in before.keys if not k.retired)
    retired = unretired + 1 - sum(1 for k in keyset.keys if not k.retired)
    where = "kept (never signing again)" if keep_retired_private else "removed from the file"
    click.echo(
        f"rotated {keys_file}: active key {keyset.active}; {retired} key(s) retired, their"
        f" private parts {where}; publish the new JWKS (`signoff keys export-jwks`)"
    )


@keys.command("export-jwks")
@KEYS_OPTION
@click.option("--out", "out", default=None, type=click.Path(dir_okay=False))
def keys_export(keys_file: str, out: str | None) -> None:
    """Print (or write) the public JWKS: every key's public half and window, never a secret."""
    _write(json.dumps(load_keyset(keys_file).public_jwks(), indent=2) + "\n", out)


@keys.command("export-trust")
@KEYS_OPTION
@click.option("--tenant", "tenants", multiple=True, help="A tenant whose log to vouch for.")
@click.option("--log-name", envvar="SIGNOFF_LOG_NAME", default=None, help="As the server's.")
@click.option("--public-url", envvar="SIGNOFF_PUBLIC_URL", default=None, help="As the server's.")
@click.option("--witness", "witness_vkeys", multiple=True, help="A witness's vkey (repeatable).")
@click.option("--witness-quorum", type=int, default=None, help="Cosignatures required [all].")
@click.option(
    "--idp",
    "idps",
    nargs=2,
    multiple=True,
    metavar="ISSUER JWKS_FILE",
    help="An identity provider whose tokens vouch for approvals, and its public JWKS file.",
)
@click.option("--out", "out", default=None, type=click.Path(dir_okay=False))
def keys_export_trust(
    keys_file: str,
    tenants: Sequence[str],
    log_name: str | None,
    public_url: str | None,
    witness_vkeys: Sequence[str],
    witness_quorum: int | None,
    idps: Sequence[tuple[str, str]],
    out: str | None,
) -> None:
    """Write the trust file a verifier needs: public keys, log origins, witnesses, providers."""
    from signoff.gate._proof import log_name_for
    from signoff.proof import origin_for

    keyset = load_keyset(keys_file)
    name = log_name or log_name_for(public_url, keyset)
    vkeys = list(witness_vkeys)
    if not vkeys and os.environ.get(WITNESSES_ENV):
        vkeys = [w.cosigner.vkey() for w in parse_witnesses(os.environ[WITNESSES_ENV])]
    try:
        witnesses = tuple(parse_vkey(v) for v in vkeys)
    except NoteRejected as exc:
        raise ProofFormatError(f"{exc} — pass the witness's vkey as it publishes it") from None
    trust = TrustRoot(
        PublicKeys(keyset.public_jwks()),
        frozenset(origin_for(name, tenant) for tenant in tenants),
        witnesses,
        len(witnesses) if witness_quorum is None else witness_quorum,
        tuple({"issuer": issuer, "jwks": _read_json(path)} for issuer, path in idps),
    )
    _write(json.dumps(trust.to_document(), indent=2) + "\n", out)


@keys.command("vkey")
@KEYS_OPTION
@click.option("--tenant", required=True, help="The tenant whose log a witness will follow.")
@click.option("--log-name", envvar="SIGNOFF_LOG_NAME", default=None, help="As the server's.")
@click.option("--public-url", envvar="SIGNOFF_PUBLIC_URL", default=None, help="As the server's.")
def keys_vkey(keys_file: str, tenant: str, log_name: str | None, public_url: str | None) -> None:
    """Print the log's origin and signed-note vkey: what a witness is configured with."""
    from signoff.gate._proof import log_name_for
    from signoff.proof import origin_for
    from signoff.proof._note import note_vkey

    keyset = load_keyset(keys_file)
    origin = origin_for(log_name or log_name_for(public_url, keyset), tenant)
    click.echo(f"{origin} {note_vkey(origin, keyset.note_key().public_bytes_raw())}")


def _write(text: str, out: str | None) -> None:
    if out is None:
        click.echo(text, nl=False)
    else:
        Path(out).write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}")


@click.group()
def token() -> None:
    """Check confirmation tokens without a database."""


@token.command("verify")
@click.argument("token_text", metavar="TOKEN")
@click.option("--jwks", "jwks", required=True, type=click.Path(dir_okay=False))
@click.option("--audience", default="signoff", show_default=True, help="This executor's name.")
@click.option("--issuer", default=None, help="Refuse tokens from another issuer.")
def token_verify(token_text: str, jwks: str, audience: str, issuer: str | None) -> None:
    """Verify a signed confirmation token; print its claims. It still must be consumed once."""
    try:
        claims = verify_confirmation(
            token_text, PublicKeys.from_file(jwks), audience=audience, now=_now(), issuer=issuer
        )
    except Refusal as exc:
        exc.message += " — do not execute; ask for a new confirmation"
        raise
    click.echo(json.dumps(claims.to_claims(), indent=2, sort_keys=True))


def trust_root(jwks: str | None, trust: str | None) -> TrustRoot | None:
    if jwks is not None and trust is not None:
        raise InvalidRequest("pass one of --jwks or --trust — not both")
    if trust is not None:
        return TrustRoot.from_file(trust)
    if jwks is not None:
        return TrustRoot(PublicKeys.from_file(jwks))
    return None


def expectation(proposal: str | None, digest: str | None, args: str | None) -> Expectation:
    arguments = None if args is None else _read_json(args)
    return Expectation(proposal, digest, arguments)


def verify_offline(
    bundle: str | None,
    receipt: str | None,
    trust: TrustRoot | None,
    *,
    held_files: Sequence[str] = (),
    allow_uncovered: bool = False,
    expect: Expectation | None = None,
    require_evidence: str | None = None,
    as_json: bool = False,
) -> None:
    """`signoff audit verify --bundle FILE | --receipt FILE --trust FILE | --jwks FILE`."""
    if (bundle is None) == (receipt is None):
        raise InvalidRequest("pass one of --bundle or --receipt — not both")
    if trust is None:
        raise NoTrustRoot(
            "nothing verifies without a trust root obtained apart from what you verify"
            " — pass --trust FILE (`signoff keys export-trust`) or --jwks FILE"
        )
    held = [_read_text(path) for path in held_files]
    if bundle is not None:
        report = verify_bundle(
            _read_json(bundle),
            trust,
            held=held,
            allow_uncovered=allow_uncovered,
            expect=expect,
            require_evidence=require_evidence,
        )
        what = f"bundle {bundle}"
    else:
        assert receipt is not None
        signed, document = read_receipt_file(_read_text(receipt))
        outside = (document or {}).get("checkpoint")
        extra = [outside] if isinstance(outside, str) else []
        report = verify_receipt(
            signed, trust, held=[*held, *extra], expect=expect, require_evidence=require_evidence
        )
        what = f"receipt {receipt}"
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        _print(report, what)
    if not report.ok:
        sys.exit(1)


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ProofFormatError(f"cannot read {path} ({exc.strerror}) — check the path") from None


def _read_json(path: str) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise ProofFormatError(f"{path} is not JSON ({exc.msg}) — export it again") from None


def _when(seconds: int | None) -> str:
    if seconds is None:
        return "no signed time"
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _print(report: Report, what: str) -> None:
    click.echo(
        f"{what}: {report.events} events, {report.checkpoints} signed checkpoints, "
        f"{report.covered} covered, {report.uncovered} not covered by a checkpoint"
    )
    if report.checkpoints:
        cosigned = ", ".join(f"{n} at {_when(t)}" for n, t in sorted(report.cosigned_by.items()))
        click.echo(
            f"  newest checkpoint signed {_when(report.signed_at)};"
            f" cosigned by {cosigned or 'no witness'}"
        )
    click.echo(
        f"  {report.executions} executions checked, "
        f"{report.device_signatures} device signatures verified"
    )
    vouched = Counter(a["vouched_by"] for a in report.approvals)
    if vouched:
        by = ", ".join(f"{n} {VOUCHED_WORDS.get(k, k)}" for k, n in sorted(vouched.items()))
        click.echo(f"  approvals vouched for by: {by}")
    for proven in report.proven:
        _print_proven(proven)
    for note in report.notes:
        click.echo(f"  note: {note}")
    for finding in report.findings:
        click.echo(f"BROKEN {finding}", err=True)
    click.echo("verified" if report.ok else f"NOT verified: {len(report.findings)} findings")


def _print_proven(p: dict[str, Any]) -> None:
    op, resource = p.get("op") or {}, p.get("resource") or {}
    click.echo(
        f"  proves proposal {p['proposal_id']}: {op.get('tool')} v{op.get('version')},"
        f" args digest {p['args_digest']}, resource {resource.get('id')}"
        f" (state {resource.get('state')})"
    )
    for a in p["approvers"]:
        click.echo(
            f"    approved by {a['subject']} as {a['role']} at"
            f" {_when(a['decided_at'] // 1_000_000)}, vouched for by {_vouched(a)}"
        )
    click.echo(
        f"    outcome {p['outcome']}, provider reference {p['provider_reference']},"
        f" execution {p['execution_id']}, at {_when(p['completed_at'] // 1_000_000)}"
    )


VOUCHED_WORDS = {
    "signoff": "signoff's signature only",
    "device": "the person's device (WebAuthn)",
    "spc": "the person's device (Secure Payment Confirmation)",
    "idp": "the identity provider's token",
    "unchecked": "nothing checked (the proposal is not among the events)",
}


def _vouched(approver: dict[str, Any]) -> str:
    words = VOUCHED_WORDS.get(approver.get("vouched_by", "signoff"), "signoff")
    if "enrolment_vouched" in approver:
        words += (
            ", enrolment vouched" if approver["enrolment_vouched"] else (", enrolment not vouched")
        )
    return words


def verify_database(store: Store, trust: TrustRoot) -> Report:
    from signoff.gate._audit_verify import verify_stored_checkpoints

    return verify_stored_checkpoints(store, trust)


def export(
    db: str,
    tenant: str,
    since: int,
    out: str,
    keys_file: str | None,
    log_name: str | None,
    state: str | None = None,
) -> None:
    """`signoff audit export`: checkpoint now, write the tenant's bundle."""
    from signoff.cli._main import open_existing_store

    proof = cli_proof(keys_file, log_name, state, "exporting signs a fresh checkpoint")
    problems: list[str] = []
    with open_existing_store(db) as store:
        gate = _gate(store, proof)
        bundle = gate.export_bundle(tenant, since=since, problems=problems)
    Path(out).write_text(json.dumps(bundle, indent=1) + "\n", encoding="utf-8")
    click.echo(
        f"wrote {out}: {len(bundle['events'])} events of tenant {tenant!r}, "
        f"{len(bundle['checkpoints'])} checkpoints; verify with "
        f"`signoff audit verify --bundle {out} --trust TRUST`"
    )
    for problem in problems:
        click.echo(f"PROBLEM {problem}", err=True)
    if problems:
        sys.exit(1)


def checkpoint_now(
    db: str, keys_file: str | None, log_name: str | None, state: str | None = None
) -> None:
    """`signoff audit checkpoint`: sign each tenant's log at its head (for a cron job)."""
    from signoff.cli._main import open_existing_store

    proof = cli_proof(keys_file, log_name, state, "checkpointing signs with the deployment's key")
    refused: list[tuple[str, SignerRefused]] = []
    with open_existing_store(db) as store:
        made = _gate(store, proof).checkpoint_now(
            on_refusal=lambda tenant, refusal: refused.append((tenant, refusal))
        )
    for record in made:
        click.echo(f"{record.tenant}: checkpoint at size {record.size}")
    for tenant, refusal in refused:
        click.echo(f"REFUSED {tenant}: [{refusal.code}] {refusal.message}", err=True)
    if not made and not refused:
        click.echo("nothing new to checkpoint")
    if refused:
        sys.exit(1)


def init_signer(
    db: str,
    keys_file: str | None,
    log_name: str | None,
    state: str | None,
    tenants: Sequence[str],
    adopt_head: bool,
) -> None:
    """`signoff audit init-signer`: set the signer's view of each log from the store (audited)."""
    from signoff.cli._main import open_existing_store

    proof = cli_proof(keys_file, log_name, state, "re-initialising the signer needs its keys")
    with open_existing_store(db) as store:
        gate = _gate(store, proof)
        if not tenants:
            with store.read() as tx:
                tenants = sorted(tx.audit_heads())
        for tenant in tenants:
            record = gate.init_signer(tenant, adopt_head=adopt_head)
            size = "nothing signed yet" if record is None else f"checkpoint at {record.size}"
            click.echo(f"{tenant}: signer initialised for {proof.origin(tenant)}; {size}")


def cli_proof(
    keys_file: str | None, log_name: str | None, state: str | None, why: str
) -> GateProof:
    """The signing setup of a CLI command that signs: keys, log name, signer state, witnesses."""
    from signoff.gate._proof import GateProof, log_name_for

    keys_file = keys_file or os.environ.get(KEYS_FILE_ENV)
    keyset = load_keyset(keys_file) if keys_file else keyset_from_environment(os.environ)
    if keyset is None:
        raise SigningKeyError(f"{why} — pass --keys FILE or set {KEYS_FILE_ENV}")
    state = state or os.environ.get(STATE_ENV)
    if state is None and keys_file is None:
        raise SigningKeyError(
            f"the signer keeps its state beside the key file — set {STATE_ENV} to a directory"
        )
    directory = Path(state) if state else state_directory_for(str(keys_file))
    name = log_name or log_name_for(os.environ.get("SIGNOFF_PUBLIC_URL"), keyset)
    return GateProof(
        keyset,
        issuer=name,
        log_name=name,
        signer=FileSignerState(directory),
        witnesses=parse_witnesses(os.environ.get(WITNESSES_ENV, "")),
    )


def _gate(store: Store, proof: GateProof) -> Gate:
    """A gate with no tools: enough to checkpoint and export the audit log."""
    from signoff.catalog._catalog import Catalog
    from signoff.gate._gate import Gate

    return Gate(Catalog(), store, proof=proof)
