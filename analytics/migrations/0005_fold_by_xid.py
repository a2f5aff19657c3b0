"""Ingest stops naming its traces: on Postgres every trace row carries the id of the transaction
that stored it (``traces_trace.rollup_xid``, a column default, so ingest sends no statement for the
rollups), and the fold keeps the snapshot up to which it has added traces (`FoldState`). A trace is
pending while its transaction is not visible in that snapshot (`analytics.rollups`).

The column is not a model field (Django never reads or writes it).

Rolling deploys: processes still on the previous release write `PendingBatch` rows with their
traces. A trigger clears ``rollup_xid`` on the traces a batch row names, in the same transaction,
so those traces are counted through their batch only (by either release's fold), never twice.
The order below matters: the column, its index (built on an all-null column: a scan, no entries)
and the trigger exist before the default is set, and nothing is pending before that.

Not atomic (CREATE INDEX CONCURRENTLY). Each ALTER TABLE on ``traces_trace`` takes its lock for an
instant: no rewrite, no scan.
"""

from django.db import migrations, models

TRIGGER_FUNCTION = """
CREATE OR REPLACE FUNCTION analytics_pendingbatch_unmark() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE traces_trace SET rollup_xid = NULL WHERE id = ANY(NEW.trace_ids) AND rollup_xid IS NOT NULL;
    RETURN NULL;
END $$
"""
TRIGGER = """
CREATE TRIGGER analytics_pendingbatch_unmark AFTER INSERT ON analytics_pendingbatch
FOR EACH ROW EXECUTE FUNCTION analytics_pendingbatch_unmark()
"""
NOTHING_FOLDED = "3:3:"  # a pg_snapshot in which no transaction is visible (3: the first normal xid)

FORWARD = [
    "ALTER TABLE traces_trace ADD COLUMN IF NOT EXISTS rollup_xid xid8",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS trace_rollup_xid ON traces_trace (rollup_xid, team_id)"
    " WHERE rollup_xid IS NOT NULL",
    TRIGGER_FUNCTION,
    "DROP TRIGGER IF EXISTS analytics_pendingbatch_unmark ON analytics_pendingbatch",
    TRIGGER,
    "ALTER TABLE traces_trace ALTER COLUMN rollup_xid SET DEFAULT pg_current_xact_id()",
]
# Back: the traces still pending become batch rows again (the previous release's form), then the
# column goes. The trigger goes first, or it would clear what the batches name.
BACKWARD = [
    "ALTER TABLE traces_trace ALTER COLUMN rollup_xid DROP DEFAULT",
    "DROP TRIGGER IF EXISTS analytics_pendingbatch_unmark ON analytics_pendingbatch",
    "DROP FUNCTION IF EXISTS analytics_pendingbatch_unmark()",
    "INSERT INTO analytics_pendingbatch (team_id, trace_ids, first_second, last_second)"
    " SELECT t.team_id, array_agg(t.id), floor(extract(epoch FROM min(t.timestamp)))::bigint,"
    " floor(extract(epoch FROM max(t.timestamp)))::bigint"
    " FROM traces_trace t, analytics_foldstate s"
    " WHERE t.rollup_xid IS NOT NULL AND NOT pg_visible_in_snapshot(t.rollup_xid, s.snapshot::pg_snapshot)"
    " GROUP BY t.team_id",
    "DROP INDEX CONCURRENTLY IF EXISTS trace_rollup_xid",
    "ALTER TABLE traces_trace DROP COLUMN IF EXISTS rollup_xid",
]


def forward(apps, schema_editor):
    state = apps.get_model("analytics", "FoldState")
    state.objects.using(schema_editor.connection.alias).get_or_create(pk=1, defaults={"snapshot": NOTHING_FOLDED})
    for sql in FORWARD:
        schema_editor.execute(sql)


def backward(apps, schema_editor):
    for sql in BACKWARD:
        schema_editor.execute(sql)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("analytics", "0004_pending_batch"),
        ("traces", "0008_trace_failed_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="FoldState",
            fields=[
                ("id", models.PositiveSmallIntegerField(default=1, primary_key=True, serialize=False)),
                (
                    "snapshot",
                    models.TextField(
                        help_text="The pg_snapshot up to which traces are folded: a trace is pending while its"
                        " transaction (traces_trace.rollup_xid) is not visible in it."
                    ),
                ),
                ("folded_at", models.DateTimeField(auto_now=True)),
            ],
        ),
        migrations.RunPython(forward, backward),
    ]
