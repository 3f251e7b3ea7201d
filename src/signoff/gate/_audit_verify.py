"""`signoff audit verify --db URL --jwks FILE`: the stored checkpoints against the chain.

The chain alone cannot tell a recomputed history, or a tail cut together with
its head row, from the real one. With a trust root, every stored checkpoint
must be signed by a trusted key for its log and have the root that the
stored events give at its size; one larger than the log means the tail was
cut. Whole-log work, for an operator or an auditor, not a request path.
"""

from __future__ import annotations

from signoff.proof import CompactTree, Report, TrustRoot, leaf_hash
from signoff.proof._checkpoint import open_checkpoint
from signoff.proof._note import NoteRejected
from signoff.store._base import Store


def verify_stored_checkpoints(store: Store, trust: TrustRoot) -> Report:
    report = Report()
    with store.read() as tx:
        tenants = sorted(set(tx.audit_heads()) | set(tx.checkpointed_tenants()))
    for tenant in tenants:
        with store.read() as tx:
            events = tx.audit_events(tenant=tenant)
            stored = tx.checkpoints(tenant)
        report.events += len(events)
        sizes = {record.size for record in stored}
        covered = 0
        roots: dict[int, bytes] = {}
        tree = CompactTree()
        for event in events:
            tree.append(leaf_hash(bytes.fromhex(event.hash)))
            if tree.size in sizes:
                roots[tree.size] = tree.root()
        for record in stored:
            where = f"tenant {tenant!r} checkpoint {record.size}"
            origin = record.note.split("\n", 1)[0]
            if not trust.vouches_for(origin):
                report.fail("origin_untrusted", f"{where}: log {origin!r} is not in the trust root")
                continue
            try:
                signed = open_checkpoint(record.cosigned_note, trust.keys, origin=origin)
            except NoteRejected as exc:
                report.fail("checkpoint_signature", f"{where}: {exc}")
                continue
            report.checkpoints += 1
            if signed.size > tree.size:
                report.fail(
                    "events_missing",
                    f"{where} covers {signed.size} events; the log ends at #{tree.size}"
                    " (its tail was cut)",
                )
            elif roots[signed.size] != signed.root:
                report.fail(
                    "checkpoint_mismatch",
                    f"{where}: the stored events no longer give the signed root"
                    " (history rewritten)",
                )
            else:
                covered = max(covered, signed.size)
        report.covered += covered
        report.uncovered += max(0, tree.size - max((r.size for r in stored), default=0))
    return report
