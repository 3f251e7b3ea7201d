"""`signoff demo`: the seed walk-through in the terminal, with every refusal shown."""

from __future__ import annotations

import secrets
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from signoff import (
    Decision,
    DecisionKind,
    Gate,
    ManualClock,
    Principal,
    Proposal,
    SQLiteStore,
    verify_audit,
)
from signoff._paths import data_dir, is_postgres
from signoff.cli._checks import check_writable
from signoff.cli._options import DATABASE
from signoff.demo import DemoShop, RefundProvider, demo_catalog, seed_demo_orders
from signoff.exceptions import InvalidDatabaseUrl, Refusal

AGENT = Principal("u_42", "acme", actor="agent:support-bot")
APPROVER = Principal("alice", "acme", roles=frozenset({"refund_approver"}))
FOREIGN_AGENT = Principal("u_77", "globex", actor="agent:support-bot")


@dataclass
class _Demo:
    gate: Gate
    clock: ManualClock
    shop: DemoShop
    provider: RefundProvider
    console: Console
    ok: bool = True
    keys: int = 0
    run: str = field(default_factory=lambda: secrets.token_hex(4))

    def propose(self, order_id: str, amount_minor: int) -> Proposal:
        return self.gate.propose(
            AGENT,
            "refund_order",
            {"order_id": order_id, "amount_minor": amount_minor, "currency": "CNY", "reason": None},
            rationale="Customer reports the item arrived damaged.",
        )

    def approve(self, proposal: Proposal) -> str:
        self.keys += 1
        result = self.gate.decide(
            APPROVER,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key=f"demo-{self.run}-approve-{self.keys}",
        )
        assert result.confirmation_token is not None
        return result.confirmation_token

    def expect_refusal(self, title: str, code: str, attempt: Callable[[], object]) -> None:
        try:
            attempt()
        except Refusal as exc:
            good = exc.code == code
            mark = "[green]refused[/]" if good else f"[red]wrong code, expected {code}[/]"
            self.console.print(f"  {title}: {mark} with [bold]{exc.code}[/] — {exc.message}")
            self.ok &= good
            return
        self.console.print(f"  {title}: [red]NOT refused (expected {code})[/]")
        self.ok = False


@click.command("demo")
@click.option(
    "--db",
    "db",
    type=DATABASE,
    default=None,
    help="SQLite file for signoff's store (default: demo.db in the data directory).",
)
def demo(db: str | None) -> None:
    """Walk through the seed scenario: propose, preview, approve, execute, and each refusal."""
    sys.exit(0 if run_demo(db) else 1)


def run_demo(db: str | None) -> bool:
    """Rerunnable: the store keeps its history, the simulated shop is fresh on every run."""
    if db is not None and is_postgres(db):
        raise InvalidDatabaseUrl(
            "the demo runs on SQLite — give --db a file path, or try PostgreSQL with "
            "`signoff serve --demo --db postgresql://…`"
        )
    console = Console()
    path = Path(db) if db else data_dir() / "demo.db"
    console.print(f"signoff demo — store: {path} (check: signoff audit verify --db {path})")
    with tempfile.TemporaryDirectory(prefix="signoff-demo-shop-") as scratch:
        store = SQLiteStore(path)
        store.migrate()
        check_writable(store, str(path))
        shop = DemoShop(str(Path(scratch) / "shop.sqlite"))
        seed_demo_orders(shop)
        provider = RefundProvider(shop)
        clock = ManualClock(datetime.now(UTC))
        gate = Gate(demo_catalog(shop, provider), store, clock=clock)
        demo = _Demo(gate, clock, shop, provider, console)
        try:
            _happy_path(demo)
            _refusals(demo)
            _ledger(demo, store)
        finally:
            store.close()
            shop.close()
    console.print("[bold green]demo passed[/]" if demo.ok else "[bold red]demo FAILED[/]")
    return demo.ok


def _happy_path(demo: _Demo) -> None:
    console = demo.console
    console.rule("1. The agent asks for a ¥199.00 refund of ord_1001")
    proposal = demo.propose("ord_1001", 19900)
    console.print(_preview_table(proposal))
    console.rule("2. alice (refund_approver) approves exactly this proposal")
    token = demo.approve(proposal)
    console.print(
        f"  confirmation token issued ({len(token)} characters, shown to nobody here), "
        f"bound to {AGENT.label()}"
    )
    console.rule("3. The executor consumes the token and refunds once")
    result = demo.gate.execute(AGENT, proposal.proposal_id, token)
    receipt = result.receipt
    assert receipt is not None
    console.print(
        Panel.fit(
            f"execution {receipt.execution_id}\nstatus {receipt.status.value}\n"
            f"request key {receipt.request_key}\nprovider reference {receipt.provider_reference}\n"
            f"args digest {receipt.args_digest}\napprovers {', '.join(receipt.approvers)}",
            title="receipt",
        )
    )
    demo.ok &= receipt.status.value == "succeeded"
    demo.expect_refusal(
        "replayed token",
        "already_consumed",
        lambda: demo.gate.execute(AGENT, proposal.proposal_id, token),
    )


def _refusals(demo: _Demo) -> None:
    demo.console.rule("4. What signoff refuses")
    small = demo.propose("ord_1002", 1990)
    small_token = demo.approve(small)
    bigger = demo.propose("ord_1002", 19900)
    demo.expect_refusal(
        "tampered amount (¥19.90 token presented for ¥199.00)",
        "args_mismatch",
        lambda: demo.gate.execute(AGENT, bigger.proposal_id, small_token),
    )
    late = demo.propose("ord_1003", 19900)
    late_token = demo.approve(late)
    demo.clock.advance(timedelta(minutes=11))
    demo.expect_refusal(
        "expired token (11 minutes later)",
        "token_expired",
        lambda: demo.gate.execute(AGENT, late.proposal_id, late_token),
    )
    foreign = demo.propose("ord_1004", 19900)
    foreign_token = demo.approve(foreign)
    demo.expect_refusal(
        "other tenant presents the id and token",
        "not_found",
        lambda: demo.gate.execute(FOREIGN_AGENT, foreign.proposal_id, foreign_token),
    )
    moved = demo.propose("ord_1005", 19900)
    moved_token = demo.approve(moved)
    demo.shop.touch_order("acme", "ord_1005")
    demo.expect_refusal(
        "order changed after approval",
        "state_changed",
        lambda: demo.gate.execute(AGENT, moved.proposal_id, moved_token),
    )


def _ledger(demo: _Demo, store: SQLiteStore) -> None:
    demo.console.rule("5. The provider's own ledger")
    ledger = demo.provider.ledger()
    table = Table("request key", "order", "amount", "reference")
    for entry in ledger:
        table.add_row(entry.request_key, entry.order_id, str(entry.amount_minor), entry.reference)
    demo.console.print(table)
    demo.ok &= [(e.order_id, e.amount_minor) for e in ledger] == [("ord_1001", 19900)]
    report = verify_audit(store)
    demo.console.print(
        f"  audit chain: {'intact' if report.ok else report.first_bad}, {report.events} events"
    )
    demo.ok &= report.ok


def _preview_table(proposal: Proposal) -> Table:
    preview = proposal.preview
    table = Table(title=preview.title, show_header=True)
    table.add_column("field")
    table.add_column("shown as")
    table.add_column("machine value")
    for entry in preview.fields:
        table.add_row(entry.label, entry.display_value, repr(entry.machine_value))
    table.add_section()
    table.add_row("Impact", preview.impact, "")
    table.add_row("Reversibility", preview.reversibility, "")
    table.add_row("Risk", proposal.risk.level.value, "")
    table.add_row("Approver role", str(proposal.required_role), "")
    table.add_row("Expires", f"{proposal.expires_at:%Y-%m-%d %H:%M:%S} UTC", "")
    table.add_row("Model's rationale (untrusted)", str(proposal.rationale), "")
    return table
