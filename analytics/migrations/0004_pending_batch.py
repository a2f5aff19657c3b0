"""Ingest names its traces in `PendingBatch` rows instead of writing `RollupDelta` rows: the deltas
left from before are folded into the rollups, then their table goes (docs/analytics.md)."""

from typing import Any

from django.db import DEFAULT_DB_ALIAS, migrations, models

import analytics.fields

_CHUNK = 5000


def fold_leftover_deltas(apps: Any, schema_editor: Any) -> None:
    """What `rollups.fold` did with delta rows, on the historical models: add them into the minute,
    hour and day rows, a chunk at a time (ordered by id, so each is read once)."""
    from analytics.models import COUNTERS, DIMENSIONS, HISTOGRAMS
    from analytics.rollups import add_deltas

    delta = apps.get_model("analytics", "RollupDelta")
    alias = schema_editor.connection.alias
    if not delta.objects.using(alias).exists():
        return  # (a new database, or every delta folded before the upgrade)
    if alias != DEFAULT_DB_ALIAS:  # (the fold's code writes through the default connection)
        raise RuntimeError(f"analytics 0004: fold the rollup deltas of database {alias!r} with 0003's code first")
    grains = {
        "minute": (60, apps.get_model("analytics", "MinuteRollup")),
        "hour": (3600, apps.get_model("analytics", "HourRollup")),
        "day": (86400, apps.get_model("analytics", "DayRollup")),
    }
    columns = ("team_id", "bucket", "kind", *DIMENSIONS, "key", *COUNTERS, *HISTOGRAMS)
    last = None
    while True:
        qs = delta.objects.order_by("id")
        if last is not None:
            qs = qs.filter(id__gt=last)
        rows = list(qs.values_list("id", *columns)[:_CHUNK])
        if not rows:
            return
        add_deltas([row[1:] for row in rows], grains)
        last = rows[-1][0]


class Migration(migrations.Migration):
    dependencies = [
        ("analytics", "0003_rollup_kind_bucket_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="PendingBatch",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("team_id", models.BigIntegerField()),
                ("trace_ids", analytics.fields.UUIDArrayField()),
                (
                    "first_second",
                    models.BigIntegerField(help_text="UTC epoch second of the earliest trace's timestamp."),
                ),
                ("last_second", models.BigIntegerField(help_text="UTC epoch second of the latest trace's timestamp.")),
            ],
            options={
                "indexes": [models.Index(fields=["team_id", "first_second"], name="pending_batch_team_first")],
            },
        ),
        # (Back: the deltas stay folded, the table comes back empty.)
        migrations.RunPython(fold_leftover_deltas, migrations.RunPython.noop),
        migrations.DeleteModel(name="RollupDelta"),
    ]
