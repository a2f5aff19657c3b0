"""After restoring a logical dump (pg_dump) into another cluster, before the service starts: add the
traces the dump had pending into the rollups and mark every restored trace folded.

Traces name the transaction that stored them (`analytics.snapshots`), and a new cluster's
transaction ids start from the beginning again, below the stored snapshot: new traces would look
folded, and the fold refuses to run (`snapshots.IdsWentBack`). This command, in one transaction:
folds the restored traces the stored snapshot does not see (their ids are the old cluster's, above
anything the new one has given out), clears ``rollup_xid`` on every restored trace (one UPDATE of
the table) and stores the current snapshot. Traces ingested before it ran would be marked folded
without being counted, hence: before the service starts. Physical backups, replicas and pg_upgrade
keep transaction ids and need none of this.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

from analytics import rollups, snapshots
from traces.models import SPAN_PROVIDER, Trace


class Command(BaseCommand):
    help = "After a logical restore into another cluster, before the service starts: settle the rollups' snapshot."

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("only Postgres keeps the rollups by transaction id")
        with transaction.atomic():
            if not rollups.take_fold_lock():
                raise CommandError("a fold is running: stop the workers and beat first")
            saved, now = snapshots.stored(), snapshots.current()
            if now.xmax >= saved.xmin:
                self.stdout.write(f"nothing to do: transaction ids did not go back (folded up to {saved}, now {now})")
                return
            pending, params = snapshots.pending_where(saved)
            where = RawSQL(pending, params, output_field=BooleanField())
            rows = list(
                Trace._base_manager.filter(where).exclude(provider=SPAN_PROVIDER).values_list(*rollups.TRACE_COLUMNS)
            )
            rollups.add_deltas(rollups.build_deltas(rows))
            with connection.cursor() as cursor:
                column = snapshots.COLUMN
                cursor.execute(f"UPDATE traces_trace SET {column} = NULL WHERE {column} IS NOT NULL")
                cleared = cursor.rowcount
            snapshots.store(snapshots.current())
        self.stdout.write(f"folded {len(rows):,} restored traces that were pending; {cleared:,} traces marked folded")
