"""Histograms move from JSON text ``[key, count, key, count, ...]`` to parallel integer arrays
(keys, counts), which Postgres can unnest and add up per key (docs/analytics.md). Existing rows
are converted in place, in batches; going back rebuilds the JSON text."""

import orjson
from django.db import migrations

import analytics.fields

MODELS = ("rollupdelta", "minuterollup", "hourrollup", "dayrollup")
BATCH = 2000


def _split(text):
    flat = orjson.loads(text) if text else []
    return flat[0::2], flat[1::2]


def to_arrays(apps, schema_editor):
    for name in MODELS:
        model = apps.get_model("analytics", name)
        last = None
        while True:
            qs = model.objects.order_by("pk")
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
            model.objects.bulk_update(objs, ["latency_keys", "latency_counts", "ttft_keys", "ttft_counts"])
            last = rows[-1][0]


def to_text(apps, schema_editor):
    for name in MODELS:
        model = apps.get_model("analytics", name)
        objs = []
        for pk, lk, lc, tk, tc in model.objects.values_list(
            "pk", "latency_keys", "latency_counts", "ttft_keys", "ttft_counts"
        ).iterator():
            obj = model(pk=pk)
            obj.latency_hist = orjson.dumps([v for pair in zip(lk, lc) for v in pair]).decode()
            obj.ttft_hist = orjson.dumps([v for pair in zip(tk, tc) for v in pair]).decode()
            objs.append(obj)
        model.objects.bulk_update(objs, ["latency_hist", "ttft_hist"], batch_size=BATCH)


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
