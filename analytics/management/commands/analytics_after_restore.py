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

from analytics import rollups, snapshots
from traces.models import Trace


class Command(BaseCommand):
    help = "After a logical restore into another cluster, before the service starts: settle the rollups' snapshot."

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            if not rollups.take_fold_lock():
                raise CommandError("a fold is running: stop the workers and beat first")
            saved, now = snapshots.stored(), snapshots.current()
            if now.xmax >= saved.xmin:
                self.stdout.write(f"nothing to do: transaction ids did not go back (folded up to {saved}, now {now})")
                return
            folded = rollups.add_traces_where(*snapshots.pending_where(saved))
            with connection.cursor() as cursor:
                table, column = connection.ops.quote_name(Trace._meta.db_table), snapshots.COLUMN
                cursor.execute(f"UPDATE {table} SET {column} = NULL WHERE {column} IS NOT NULL")
                cleared = cursor.rowcount
            snapshots.store(snapshots.current())
        self.stdout.write(f"folded {folded:,} restored traces that were pending; {cleared:,} traces marked folded")
