"""`signoff keys …`, `signoff token verify` and the offline halves of `signoff audit verify`.

Nothing here opens a database: keys come from their file, tokens, bundles
and receipts are checked with ``signoff.proof`` and a JWKS alone.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from signoff._clock import SystemClock, to_micros
from signoff.exceptions import InvalidRequest, ProofFormatError, Refusal, SigningKeyError
from signoff.proof import (
    KEYS_FILE_ENV,
    KeySet,
    PublicKeys,
    Report,
    keyset_from_environment,
    load_keyset,
    read_receipt_file,
    verify_bundle,
    verify_confirmation,
    verify_receipt,
)

if TYPE_CHECKING:
    from signoff.gate._gate import Gate
    from signoff.gate._proof import GateProof
    from signoff.store import Store

ALG = click.Choice(["EdDSA", "ES256"])
KEYS_OPTION = click.option(
    "--keys",
    "keys_file",
    envvar=KEYS_FILE_ENV,
    required=True,
    type=click.Path(dir_okay=False),
    help=f"The signing key file (env {KEYS_FILE_ENV}).",
)


@click.group()
def keys() -> None:
    """Signing keys: a JWK set file with private keys, one active kid; never in the database."""


@keys.command("generate")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False))
@click.option("--alg", default="EdDSA", type=ALG, show_default=True)
def keys_generate(out: str, alg: str) -> None:
    """Write a new key file (mode 0600) holding one active key."""
    if Path(out).exists():
        raise SigningKeyError(
            f"{out} already exists — rotate it with `signoff keys rotate --keys {out}`"
        )
    keyset = KeySet.generate(alg)
    keyset.save(out)
    click.echo(f"wrote {out}: active key {keyset.active} ({alg})")


@keys.command("rotate")
@KEYS_OPTION
@click.option("--alg", default="EdDSA", type=ALG, show_default=True)
def keys_rotate(keys_file: str, alg: str) -> None:
    """Add a new active key; older keys stay so what they signed still verifies."""
    keyset = load_keyset(keys_file).rotated(alg)
    keyset.save(keys_file)
    click.echo(f"rotated {keys_file}: active key {keyset.active}; {len(keyset.keys)} keys kept")


@keys.command("export-jwks")
@KEYS_OPTION
@click.option("--out", "out", default=None, type=click.Path(dir_okay=False))
def keys_export(keys_file: str, out: str | None) -> None:
    """Print (or write) the public JWKS: every key's public half, never a private part."""
    text = json.dumps(load_keyset(keys_file).public_jwks(), indent=2) + "\n"
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
    now = to_micros(SystemClock().now()) // 1_000_000
    try:
        claims = verify_confirmation(
            token_text, PublicKeys.from_file(jwks), audience=audience, now=now, issuer=issuer
        )
    except Refusal as exc:
        exc.message += " — do not execute; ask for a new confirmation"
        raise
    click.echo(json.dumps(claims.to_claims(), indent=2, sort_keys=True))


def verify_offline(bundle: str | None, receipt: str | None, jwks: str | None) -> None:
    """`signoff audit verify --bundle FILE | --receipt FILE [--jwks FILE]`."""
    if (bundle is None) == (receipt is None):
        raise InvalidRequest("pass one of --bundle or --receipt — not both")
    trusted = None if jwks is None else PublicKeys.from_file(jwks)
    if bundle is not None:
        report = verify_bundle(_read_json(bundle), trusted)
        _print(report, f"bundle {bundle}")
    else:
        assert receipt is not None
        report = _verify_receipt_file(receipt, trusted)
        _print(report, f"receipt {receipt}")
    if not report.ok:
        sys.exit(1)


def _verify_receipt_file(path: str, trusted: PublicKeys | None) -> Report:
    signed, embedded = read_receipt_file(_read_text(path))
    if trusted is None and embedded is None:
        raise ProofFormatError(f"{path} carries no keys — pass --jwks FILE")
    keys = trusted or PublicKeys(embedded or {})
    report = verify_receipt(signed, keys)
    if trusted is None:
        report.notes.append("keys taken from the receipt file itself: pass --jwks to pin them")
    return report


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


def _print(report: Report, what: str) -> None:
    click.echo(
        f"{what}: {report.events} events, {report.checkpoints} signed checkpoints, "
        f"{report.covered} covered, {report.uncovered} not yet covered by a checkpoint"
    )
    click.echo(
        f"  {report.executions} executions checked, "
        f"{report.device_signatures} device signatures verified"
    )
    for note in report.notes:
        click.echo(f"  note: {note}")
    for finding in report.findings:
        click.echo(f"BROKEN {finding}", err=True)
    click.echo("verified" if report.ok else f"NOT verified: {len(report.findings)} findings")


def export(
    db: str, tenant: str, since: int, out: str, keys_file: str | None, log_name: str
) -> None:
    """`signoff audit export`: checkpoint now, write the tenant's bundle."""
    from signoff.cli._main import open_existing_store

    proof = _cli_proof(
        keys_file, log_name, "exporting signs a fresh checkpoint and ships the public keys"
    )
    with open_existing_store(db) as store:
        bundle = _gate(store, proof).export_bundle(tenant, since=since)
    Path(out).write_text(json.dumps(bundle, indent=1) + "\n", encoding="utf-8")
    click.echo(
        f"wrote {out}: {len(bundle['events'])} events of tenant {tenant!r}, "
        f"{len(bundle['checkpoints'])} checkpoints; verify with "
        f"`signoff audit verify --bundle {out} --jwks JWKS`"
    )


def checkpoint_now(db: str, keys_file: str | None, log_name: str) -> None:
    """`signoff audit checkpoint`: sign each tenant's log at its head (for a cron job)."""
    from signoff.cli._main import open_existing_store

    proof = _cli_proof(keys_file, log_name, "checkpointing signs with the deployment's key")
    with open_existing_store(db) as store:
        made = _gate(store, proof).checkpoint_now()
    for record in made:
        click.echo(f"{record.tenant}: checkpoint at size {record.size}")
    if not made:
        click.echo("no audit events yet: nothing to checkpoint")


def _cli_proof(keys_file: str | None, log_name: str, why: str) -> GateProof:
    """The signing setup of a CLI command that signs checkpoints: --keys or the environment."""
    from signoff.gate._proof import GateProof

    keyset = load_keyset(keys_file) if keys_file else keyset_from_environment(os.environ)
    if keyset is None:
        raise SigningKeyError(f"{why} — pass --keys FILE or set {KEYS_FILE_ENV}")
    return GateProof(keyset, issuer=log_name, log_name=log_name)


def _gate(store: Store, proof: GateProof) -> Gate:
    """A gate with no tools: enough to checkpoint and export the audit log."""
    from signoff.catalog._catalog import Catalog
    from signoff.gate._gate import Gate

    return Gate(Catalog(), store, proof=proof)
