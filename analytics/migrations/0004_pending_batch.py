"""Ingest names its traces in `PendingBatch` rows instead of writing `RollupDelta` rows. The delta
table stays for one release: processes still on the old code during a rolling deploy write there,
and the fold adds those rows into the rollups (`analytics.rollups.fold`; docs/deployment.md)."""

from django.db import migrations, models

import analytics.fields


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
    ]
