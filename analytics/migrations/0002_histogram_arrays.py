"""Histograms move from JSON text ``[key, count, key, count, ...]`` to parallel integer arrays
(keys, counts), which Postgres can unnest and add up per key (docs/analytics.md). Existing rows
are converted in place (on Postgres by one UPDATE per table: a Python loop of bulk updates took over
15 minutes for 650k rows, with the tables locked); going back rebuilds the JSON text."""

import orjson
from django.db import migrations

import analytics.fields

MODELS = ("rollupdelta", "minuterollup", "hourrollup", "dayrollup")
BATCH = 2000


def _split(text):
    flat = orjson.loads(text) if text else []
    return flat[0::2], flat[1::2]


# Keys are the odd elements of the JSON list, counts the even ones (ordinality counts from 1).
_PG_SPLIT = (
    "{name}_{what} = coalesce((SELECT array_agg(v::integer ORDER BY o) "
    "FROM jsonb_array_elements_text(nullif({name}_hist, '')::jsonb) WITH ORDINALITY AS e(v, o) "
    "WHERE o % 2 = {parity}), '{{}}')"
)
_PG_JOIN = (
    "{name}_hist = '[' || array_to_string(ARRAY(SELECT x FROM unnest({name}_keys, {name}_counts) "
    "WITH ORDINALITY AS u(k, c, i), LATERAL (VALUES (1, k), (2, c)) AS p(j, x) ORDER BY i, j), ',') || ']'"
)


def _tables(apps):
    return [apps.get_model("analytics", name)._meta.db_table for name in MODELS]


def to_arrays(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        assignments = ", ".join(
            _PG_SPLIT.format(name=name, what=what, parity=parity)
            for name in ("latency", "ttft")
            for what, parity in (("keys", 1), ("counts", 0))
        )
        for table in _tables(apps):
            schema_editor.execute(f"UPDATE {table} SET {assignments}", params=None)
        return
    db = schema_editor.connection.alias  # the database being migrated (tests migrate an SQLite one too)
    for name in MODELS:
        model = apps.get_model("analytics", name)
        last = None
        while True:
            qs = model.objects.using(db).order_by("pk")
            if last is not None:
                qs = qs.filter(pk__gt=last)
            rows = list(qs.values_list("pk", "latency_hist", "ttft_hist")[:BATCH])
            if not rows:
                break
            objs = []
            for pk, latency, ttft in rows:
                obj = model(pk=pk)
                obj.latency_keys, obj.latency_counts = _split(latency)
                obj.ttft_keys, obj.ttft_counts = _split(ttft)
                objs.append(obj)
            model.objects.using(db).bulk_update(objs, ["latency_keys", "latency_counts", "ttft_keys", "ttft_counts"])
            last = rows[-1][0]


def to_text(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        assignments = ", ".join(_PG_JOIN.format(name=name) for name in ("latency", "ttft"))
        for table in _tables(apps):
            schema_editor.execute(f"UPDATE {table} SET {assignments}", params=None)
        return
    db = schema_editor.connection.alias
    for name in MODELS:
        model = apps.get_model("analytics", name)
        objs = []
        for pk, lk, lc, tk, tc in model.objects.using(db).values_list(
            "pk", "latency_keys", "latency_counts", "ttft_keys", "ttft_counts"
        ).iterator():
            obj = model(pk=pk)
            obj.latency_hist = orjson.dumps([v for pair in zip(lk, lc) for v in pair]).decode()
            obj.ttft_hist = orjson.dumps([v for pair in zip(tk, tc) for v in pair]).decode()
            objs.append(obj)
        model.objects.using(db).bulk_update(objs, ["latency_hist", "ttft_hist"], batch_size=BATCH)


class Migration(migrations.Migration):
    dependencies = [("analytics", "0001_initial")]

    operations = [
        *(
            migrations.AddField(model_name=name, name=field, field=analytics.fields.IntArrayField())
            for name in MODELS
            for field in ("latency_keys", "latency_counts", "ttft_keys", "ttft_counts")
        ),
        migrations.RunPython(to_arrays, to_text),
        *(
            migrations.RemoveField(model_name=name, name=field)
            for name in MODELS
            for field in ("latency_hist", "ttft_hist")
        ),
    ]
