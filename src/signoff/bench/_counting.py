"""Count the transactions a run commits and the round trips it makes: measured, not assumed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from signoff.bench._roundtrips import Owner, owned_by
from signoff.demo._db import ShopConnection, ShopDatabase
from signoff.store._base import Store
from signoff.store._sql import SqlTransaction


@dataclass
class Counts:
    signoff_writes: int = 0
    signoff_reads: int = 0
    shop_writes: int = 0
    shop_reads: int = 0
    signoff_trips: int = 0
    """Round trips (statements, BEGIN and COMMIT) of signoff's store."""
    shop_trips: int = 0
    """The same for the provider's database."""

    def reset(self) -> None:
        self.signoff_writes = self.signoff_reads = self.shop_writes = self.shop_reads = 0
        self.signoff_trips = self.shop_trips = 0

    def add(self, other: Counts) -> None:
        self.signoff_writes += other.signoff_writes
        self.signoff_reads += other.signoff_reads
        self.shop_writes += other.shop_writes
        self.shop_reads += other.shop_reads
        self.signoff_trips += other.signoff_trips
        self.shop_trips += other.shop_trips

    def trip(self, owner: Owner) -> None:
        if owner == "signoff":
            self.signoff_trips += 1
        else:
            self.shop_trips += 1


class CountingStore(Store):
    """Delegates to a store and counts its committed write and read transactions."""

    def __init__(self, inner: Store, counts: Counts) -> None:
        self.inner = inner
        self.url = inner.url
        self.integrity_errors = inner.integrity_errors
        self.transient_errors = inner.transient_errors
        self.counts = counts

    @contextmanager
    def transaction(self) -> Iterator[SqlTransaction]:
        with owned_by("signoff"), self.inner.transaction() as tx:
            yield tx
        self.counts.signoff_writes += 1

    @contextmanager
    def read(self) -> Iterator[SqlTransaction]:
        with owned_by("signoff"), self.inner.read() as tx:
            yield tx
        self.counts.signoff_reads += 1

    @contextmanager
    def step(self) -> Iterator[SqlTransaction]:
        with owned_by("signoff"), self.inner.step() as tx:
            yield tx
        self.counts.signoff_writes += 1

    @contextmanager
    def peek(self) -> Iterator[SqlTransaction]:
        with owned_by("signoff"), self.inner.peek() as tx:
            yield tx
        self.counts.signoff_reads += 1

    def migrate(self) -> int:
        return self.inner.migrate()

    def schema_version(self) -> int:
        return self.inner.schema_version()

    def ping(self) -> None:
        self.inner.ping()

    def close(self) -> None:
        self.inner.close()


class CountingShopDatabase:
    """The same for the shop's (the provider's) own database."""

    def __init__(self, inner: ShopDatabase, counts: Counts) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.counts = counts

    def write(self) -> AbstractContextManager[ShopConnection]:
        return self._counted(self.inner.write(), write=True)

    def read(self) -> AbstractContextManager[ShopConnection]:
        return self._counted(self.inner.read(), write=False)

    @contextmanager
    def _counted(
        self, inner: AbstractContextManager[ShopConnection], *, write: bool
    ) -> Iterator[ShopConnection]:
        with owned_by("shop"), inner as conn:
            yield conn
        if write:
            self.counts.shop_writes += 1
        else:
            self.counts.shop_reads += 1

    def autocommit(self) -> AbstractContextManager[ShopConnection]:
        return self._counted(self.inner.autocommit(), write=True)

    def close(self) -> None:
        self.inner.close()
