"""The analytics response, for the OpenAPI schema (the view renders plain dicts with orjson)."""

from __future__ import annotations

from rest_framework import serializers


class RangeSerializer(serializers.Serializer):
    since = serializers.DateTimeField(
        help_text="Start of the first interval (UTC): `since` widened to an interval start."
    )
    until = serializers.DateTimeField(help_text="End of the last interval (UTC), exclusive.")
    interval = serializers.ChoiceField(choices=["minute", "hour", "day"])
    tz = serializers.CharField(help_text="The time zone whose midnights start the days (`interval=day`).")


class TotalsSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    success = serializers.IntegerField()
    errors = serializers.IntegerField(help_text="Traces with status `error`.")  # type: ignore[assignment]
    rate_limited = serializers.IntegerField(help_text="Traces with status `rate_limited`.")
    error_rate = serializers.FloatField(help_text="(errors + rate_limited) / count, 0-1 (0 when count is 0).")
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField(help_text="Of prompt_tokens, read from a prompt cache.")
    cache_write_tokens = serializers.IntegerField(help_text="Of prompt_tokens, written to a prompt cache.")
    reasoning_tokens = serializers.IntegerField(help_text="Of completion_tokens, spent reasoning.")
    input_audio_tokens = serializers.IntegerField(help_text="Of prompt_tokens, audio.")
    input_image_tokens = serializers.IntegerField(help_text="Of prompt_tokens, images.")
    output_audio_tokens = serializers.IntegerField(help_text="Of completion_tokens, audio.")
    output_image_tokens = serializers.IntegerField(help_text="Of completion_tokens, images.")
    cost = serializers.FloatField(help_text="USD, the sum over priced traces only.")
    unpriced = serializers.IntegerField(help_text="Traces without a known price, left out of `cost`.")
    estimated_usage = serializers.IntegerField(help_text="Traces whose token counts were estimated.")


class PercentilesSerializer(serializers.Serializer):
    p50 = serializers.FloatField(allow_null=True)
    p90 = serializers.FloatField(allow_null=True)
    p95 = serializers.FloatField(allow_null=True)
    p99 = serializers.FloatField(allow_null=True)
    mean = serializers.FloatField(allow_null=True)


class PointSerializer(TotalsSerializer):
    t = serializers.DateTimeField(help_text="The interval's start (UTC, ISO 8601).")
    p50 = serializers.FloatField(allow_null=True, help_text="Latency p50 (ms) in this interval.")
    p95 = serializers.FloatField(allow_null=True, help_text="Latency p95 (ms) in this interval.")


class GroupSerializer(TotalsSerializer):
    key = serializers.CharField(help_text="The group's value (a model, provider, tag, ...).")
    latency_ms = PercentilesSerializer()
    ttft_ms = PercentilesSerializer()


class DeliveryQueueSerializer(serializers.Serializer):
    destination = serializers.CharField()
    pending = serializers.IntegerField(help_text="Waiting for their first attempt, or being sent.")
    retrying = serializers.IntegerField(help_text="Failed and waiting for a retry.")
    dead = serializers.IntegerField(help_text="Dead-lettered (replayable).")


class QueueSerializer(serializers.Serializer):
    deliveries = DeliveryQueueSerializer(many=True)
    broker = serializers.DictField(
        child=serializers.IntegerField(),
        allow_null=True,
        help_text="Messages waiting per Celery queue (Redis broker only; null otherwise).",
    )


class RateLimitPointSerializer(serializers.Serializer):
    t = serializers.DateTimeField()
    provider = serializers.CharField()
    rate_limited = serializers.IntegerField()


class RateLimitLatestSerializer(serializers.Serializer):
    upstream = serializers.CharField(allow_null=True, help_text="The proxy upstream's name.")
    provider = serializers.CharField()
    at = serializers.DateTimeField(help_text="When the upstream last answered 429 (the trace's timestamp).")
    remaining_requests = serializers.IntegerField(allow_null=True)
    remaining_tokens = serializers.IntegerField(allow_null=True)
    retry_after = serializers.CharField(allow_null=True)
    headers = serializers.DictField(child=serializers.CharField(), help_text="Every rate-limit header, as sent.")


class RateLimitsSerializer(serializers.Serializer):
    series = RateLimitPointSerializer(many=True, help_text="Rate-limited calls per interval and provider.")
    latest = RateLimitLatestSerializer(many=True, help_text="Per upstream, the headers of its last 429.")


class ScorePointSerializer(serializers.Serializer):
    t = serializers.DateTimeField(help_text="The interval's start.")
    count = serializers.IntegerField(help_text="Scores of that name on the interval's traces.")
    avg = serializers.FloatField(allow_null=True, help_text="Their average (a boolean counts 1/0); null: none.")


class ScoreFiguresSerializer(serializers.Serializer):
    name = serializers.CharField()
    count = serializers.IntegerField(help_text="Scores of that name (numeric or boolean) on the range's traces.")
    avg = serializers.FloatField(allow_null=True, help_text="Their average over the range; null: none.")
    series = ScorePointSerializer(many=True, help_text="One point per interval (the answer's `series`' times).")


class AnalyticsSerializer(serializers.Serializer):
    range = RangeSerializer()
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=["rollups", "raw"], help_text="Where the counts came from (raw: a bounded scan of the traces)."
    )
    totals = TotalsSerializer()
    latency_ms = PercentilesSerializer()
    ttft_ms = PercentilesSerializer(help_text="Time to first token (streams).")
    series = PointSerializer(many=True, help_text="One point per interval, oldest first.")
    groups = GroupSerializer(many=True, allow_null=True, help_text="With group_by: largest cost first.")
    queue = QueueSerializer()
    rate_limits = RateLimitsSerializer()
    score = ScoreFiguresSerializer(
        allow_null=True,
        help_text="With `score=<name>`: that score's average and count over the range and per interval, "
        "on the traces the filters select (by the trace's time). Null without it.",
    )
