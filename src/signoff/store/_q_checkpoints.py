"""Signed checkpoints of each tenant's audit tree, and the event hashes they cover."""

from __future__ import annotations

import json
from dataclasses import dataclass

from signoff.store._sqlbase import SqlBase

_COLUMNS = "tenant, size, root, frontier, note, created_at, cosignatures"


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """A C2SP checkpoint note for ``size`` events and the tree frontier to go on from.

    ``note`` is what the log signed; ``cosignatures`` the witnesses' cosignature
    lines gathered for it since (c2sp.org/tlog-cosignature), one per line.
    """

    tenant: str
    size: int
    root: str
    frontier: tuple[str, ...]
    note: str
    created_at: int
    cosignatures: tuple[str, ...] = ()

    @property
    def cosigned_note(self) -> str:
        """The note with every cosignature line appended: what bundles and receipts carry."""
        return self.note + "".join(f"{line}\n" for line in self.cosignatures)


def _record(row: tuple[object, ...] | None) -> CheckpointRecord | None:
    if row is None:
        return None
    tenant, size, root, frontier, note, created_at, cosignatures = row
    return CheckpointRecord(
        str(tenant), int(str(size)), str(root), tuple(json.loads(str(frontier))), str(note),
        int(str(created_at)), tuple(line for line in str(cosignatures or "").split("\n") if line),
    )  # fmt: skip


class CheckpointQueries(SqlBase):
    def insert_checkpoint(self, record: CheckpointRecord) -> None:
        # Two workers checkpointing one size sign the same root: the first row stands.
        self.run(
            f"INSERT INTO checkpoints ({_COLUMNS}) VALUES (?,?,?,?,?,?,?) "
            "ON CONFLICT (tenant, size) DO NOTHING",
            (
                record.tenant,
                record.size,
                record.root,
                json.dumps(list(record.frontier)),
                record.note,
                record.created_at,
                "\n".join(record.cosignatures),
            ),
        )

    def add_cosignatures(self, tenant: str, size: int, lines: tuple[str, ...]) -> None:
        """Keep the witnesses' cosignature lines with the checkpoint of ``size``."""
        self.run(
            "UPDATE checkpoints SET cosignatures = ? WHERE tenant = ? AND size = ?",
            ("\n".join(lines), tenant, size),
        )

    def checkpoint_at(self, tenant: str, size: int) -> CheckpointRecord | None:
        return _record(
            self.run(
                f"SELECT {_COLUMNS} FROM checkpoints WHERE tenant = ? AND size = ?",
                (tenant, size),
            ).fetchone()
        )

    def checkpointed_tenants(self) -> list[str]:
        rows = self.run("SELECT DISTINCT tenant FROM checkpoints ORDER BY tenant").fetchall()
        return [str(row[0]) for row in rows]

    def latest_checkpoint(self, tenant: str) -> CheckpointRecord | None:
        return _record(
            self.run(
                f"SELECT {_COLUMNS} FROM checkpoints WHERE tenant = ? ORDER BY size DESC LIMIT 1",
                (tenant,),
            ).fetchone()
        )

    def checkpoint_covering(self, tenant: str, seq: int) -> CheckpointRecord | None:
        """The first checkpoint whose tree holds event ``seq``."""
        return _record(
            self.run(
                f"SELECT {_COLUMNS} FROM checkpoints WHERE tenant = ? AND size >= ? "
                "ORDER BY size LIMIT 1",
                (tenant, seq),
            ).fetchone()
        )

    def checkpoint_before(self, tenant: str, seq: int) -> CheckpointRecord | None:
        """The last checkpoint made before event ``seq`` existed."""
        return _record(
            self.run(
                f"SELECT {_COLUMNS} FROM checkpoints WHERE tenant = ? AND size < ? "
                "ORDER BY size DESC LIMIT 1",
                (tenant, seq),
            ).fetchone()
        )

    def checkpoints(self, tenant: str, *, since: int = 0) -> list[CheckpointRecord]:
        rows = self.run(
            f"SELECT {_COLUMNS} FROM checkpoints WHERE tenant = ? AND size >= ? ORDER BY size",
            (tenant, since),
        ).fetchall()
        return [r for r in map(_record, rows) if r is not None]

    def audit_hashes(self, tenant: str, after: int, upto: int) -> list[str]:
        """The hashes of events ``after + 1 … upto`` in order: the tree's new leaves."""
        rows = self.run(
            "SELECT hash FROM audit_events WHERE tenant = ? AND seq > ? AND seq <= ? ORDER BY seq",
            (tenant, after, upto),
        ).fetchall()
        return [str(row[0]) for row in rows]

    def audit_head_seq(self, tenant: str) -> int:
        row = self.run("SELECT seq FROM audit_heads WHERE tenant = ?", (tenant,)).fetchone()
        return 0 if row is None else int(row[0])

    def appended(self) -> dict[str, int]:
        """The tenants this transaction appended audit events to, and their new head."""
        return {tenant: head[0] for tenant, head in self._heads.items()}
