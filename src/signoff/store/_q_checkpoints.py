"""Signed checkpoints of each tenant's audit tree, and the event hashes they cover."""

from __future__ import annotations

import json
from dataclasses import dataclass

from signoff.store._sqlbase import SqlBase

_COLUMNS = "tenant, size, root, frontier, note, created_at"


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """A C2SP checkpoint note for ``size`` events and the tree frontier to go on from."""

    tenant: str
    size: int
    root: str
    frontier: tuple[str, ...]
    note: str
    created_at: int


def _record(row: tuple[object, ...] | None) -> CheckpointRecord | None:
    if row is None:
        return None
    tenant, size, root, frontier, note, created_at = row
    return CheckpointRecord(
        str(tenant), int(str(size)), str(root), tuple(json.loads(str(frontier))), str(note),
        int(str(created_at)),
    )  # fmt: skip


class CheckpointQueries(SqlBase):
    def insert_checkpoint(self, record: CheckpointRecord) -> None:
        # Two workers checkpointing one size sign the same root: the first row stands.
        self.run(
            f"INSERT INTO checkpoints ({_COLUMNS}) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT (tenant, size) DO NOTHING",
            (
                record.tenant,
                record.size,
                record.root,
                json.dumps(list(record.frontier)),
                record.note,
                record.created_at,
            ),
        )

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
