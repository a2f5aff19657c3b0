"""GIN indexes for the feed's list and metadata filters (jsonb containment)."""

from django.db import migrations

INDEXES = {
    "trace_tags_gin": "tags",
    "trace_destinations_gin": "destinations",
    "trace_metadata_gin": "metadata",
}


def create(apps, schema_editor):
    for name, column in INDEXES.items():
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON traces_trace USING gin ({column} jsonb_path_ops)")


def drop(apps, schema_editor):
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("traces", "0002_upstream")]

    operations = [migrations.RunPython(create, drop)]
