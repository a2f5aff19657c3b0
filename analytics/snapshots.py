"""Which traces the rollups count, on Postgres: each trace's transaction against the fold's snapshot.

Every trace row carries ``rollup_xid``, the id of the transaction that stored it (a column default:
migration analytics 0005; ingest sends nothing for it). `FoldState.snapshot` is the pg_snapshot up
to which the fold has added traces: a trace whose transaction is visible in it is folded, any other
is pending. Snapshots only ever see more, so "pending" is (``rollup_xid`` >= the snapshot's xmax)
or (``rollup_xid`` in its in-progress list): two index look-ups (``trace_rollup_xid``) that touch
the pending traces only, however long a transaction stays open elsewhere.

The fold takes the current snapshot, adds the pending traces visible in it and stores it, all in
one transaction. With a backlog it goes in steps: `Snapshot.cut` is the current snapshot limited
to transactions below an id, which still sees everything the stored one saw. A transaction still
running when the fold looked is in the stored snapshot's in-progress list and is folded by a later
fold once it commits; its traces stay pending (and are counted by readers) until then.

Sub-transactions (savepoints) are no concern: ``pg_current_xact_id()`` is the top-level id, which
is what snapshots list.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.db import connection

from .models import FoldState

COLUMN = "rollup_xid"  # traces_trace's column (not a model field: Django never reads or writes it)


@dataclass(frozen=True)
class Snapshot:
    """A pg_snapshot: transactions below ``xmin`` are finished, those from ``xmax`` on are not
    visible, and in between all are finished but ``xip``."""

    xmin: int
    xmax: int
    xip: tuple[int, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Snapshot:
        xmin, xmax, xip = text.split(":")
        return cls(int(xmin), int(xmax), tuple(int(x) for x in xip.split(",") if x))

    def __str__(self) -> str:
        return f"{self.xmin}:{self.xmax}:{','.join(map(str, self.xip))}"

    def visible(self, xid: int) -> bool:
        """As ``pg_visible_in_snapshot``."""
        return xid < self.xmin or (xid < self.xmax and xid not in self.xip)

    def seeing(self, own: int | None) -> Snapshot:
        """This snapshot, taken by transaction ``own``, seeing ``own`` too. A snapshot never lists
        its own transaction as in progress; from its xmax on, every id was assigned before ``own``
        and is still running, so those go in the list."""
        if own is None or own < self.xmax:
            return self
        return Snapshot(self.xmin, own + 1, (*self.xip, *range(self.xmax, own)))

    def cut(self, below: int) -> Snapshot:
        """This snapshot seeing only transactions below ``below``."""
        xmax = min(self.xmax, below)
        return Snapshot(min(self.xmin, below), xmax, tuple(x for x in self.xip if x < xmax))


class IdsWentBack(RuntimeError):
    """The database's transaction ids are behind the stored snapshot: it was restored from a
    logical dump (pg_dump) into another cluster, whose ids start again from the beginning. New
    traces would look folded. `manage.py analytics_after_restore` settles it (docs/deployment.md);
    physical backups, replicas and pg_upgrade keep the ids and need nothing."""

    def __init__(self, saved: Snapshot, now: Snapshot) -> None:
        super().__init__(
            f"transaction ids went back (folded up to {saved}, now {now}): the database was restored from a"
            " logical dump; run `manage.py analytics_after_restore` (docs/deployment.md)"
        )


NOTHING_FOLDED = Snapshot(3, 3)  # no transaction visible (3: the first normal transaction id)


def pending_where(saved: Snapshot, alias: str = "") -> tuple[str, list[Any]]:
    """SQL (and its parameters) true of a trace pending after ``saved``: not visible in it."""
    column = f"{alias}.{COLUMN}" if alias else COLUMN
    return f"({column} >= %s::xid8 OR {column} = ANY(%s::xid8[]))", list(values(saved))


def pending_where_read(saved: Snapshot, alias: str) -> tuple[str, list[Any]]:
    """`pending_where` for a reader that took ``saved`` with `stored` in an earlier statement: the
    values let the planner see how few traces lie past its xmax (a bound read by the statement
    itself is unknown when planning, guessed at a third of the table), and the statement checks
    against the `FoldState` it sees itself as well. Under REPEATABLE READ the two are the same; in
    a READ COMMITTED transaction (an alert's evaluation) a fold may commit between the statements,
    and the statement's own, later snapshot is the one that matches the rollups it reads. It sees
    no more than the earlier one: its pending traces are among those of ``saved``."""
    sql, params = pending_where(saved, alias)
    table = connection.ops.quote_name(FoldState._meta.db_table)
    stored = f"coalesce((SELECT snapshot FROM {table} WHERE id = 1), '{NOTHING_FOLDED}')::pg_snapshot"
    return f"{sql} AND NOT pg_visible_in_snapshot({alias}.{COLUMN}, {stored})", params


def values(saved: Snapshot) -> tuple[str, str]:
    """``saved``'s xmax and in-progress list as parameters (for ``%s::xid8`` and ``%s::xid8[]``)."""
    return str(saved.xmax), "{" + ",".join(map(str, saved.xip)) + "}"


def stored() -> Snapshot:
    """The stored `FoldState` (NOTHING_FOLDED when there is no row: a flushed test database)."""
    with connection.cursor() as cursor:  # (every read of an answer asks: no ORM query to compile)
        cursor.execute(f"SELECT snapshot FROM {connection.ops.quote_name(FoldState._meta.db_table)} WHERE id = 1")
        row = cursor.fetchone()
    return NOTHING_FOLDED if row is None else Snapshot.parse(row[0])


_answer: ContextVar[list[Snapshot] | None] = ContextVar("analytics_fold_state_read", default=None)


@contextmanager
def one_look() -> Iterator[None]:
    """Within it, `for_read` reads `FoldState` once and hands every read the same: an answer's
    reads (series, totals, groups, ...) run in one snapshot. Outside REPEATABLE READ a later read
    gets an older look than its statement sees, which `pending_where_read` allows for."""
    token = _answer.set([])
    try:
        yield
    finally:
        _answer.reset(token)


def for_read() -> Snapshot:
    """`stored`, once per `one_look` block (every time outside one)."""
    looked = _answer.get()
    if looked is None:
        return stored()
    if not looked:
        looked.append(stored())
    return looked[0]


def current() -> Snapshot:
    """The snapshot of this statement (inside a READ COMMITTED transaction, later statements see at
    least as much), seeing this transaction too if it has an id already: what it stored counts as
    committed with it. (The fold's own transaction stores no traces, and has no id when it looks;
    a caller that stored traces in the same transaction, as tests do, gets them folded.)"""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_snapshot()::text, pg_current_xact_id_if_assigned()::text")
        text, own = cursor.fetchone()
    return Snapshot.parse(text).seeing(None if own is None else int(own))


def store(snapshot: Snapshot) -> None:
    FoldState.objects.update_or_create(pk=1, defaults={"snapshot": str(snapshot)})


def all_folded() -> None:
    """Count every committed trace as folded (for loaders that add their traces' deltas themselves,
    with no ingest running: the benches)."""
    store(current())
