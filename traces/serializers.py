"""What the trace API sends and receives.

Bodies are built by the plain functions at the top (`trace_json`, ...): they run for every trace
of a feed page and every ingest response, where DRF's serializer machinery would cost ~20x more.
The Serializer classes below them describe the same shapes for the OpenAPI document only; the
schema fuzz test (tests/api/test_schema_fuzz.py) checks that the two agree.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers

from config.jsoncodec import iso

from .models import Kind, Plant, Source, Status, Trace
from .usage import TokenDetails

# One value of a trace feed filter in a saved definition (reports, dashboard widgets): as in the feed's
# query string, where numbers and booleans are their text and a list is joined with commas.
FILTER_VALUE_SCHEMA = {
    "anyOf": [
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "array", "items": {"type": "string"}, "description": "Joined with commas (a list filter)."},
    ]
}

USAGE_HELP = {
    "cached_tokens": "Part of prompt_tokens read from the provider's prompt cache (OpenAI "
    "`prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`); priced at the cached rate.",
    "cache_write_tokens": "Part of prompt_tokens written to the prompt cache (Anthropic "
    "`cache_creation_input_tokens`); priced at the cache-write rate.",
    "input_audio_tokens": "Part of prompt_tokens that is audio.",
    "input_image_tokens": "Part of prompt_tokens that is images.",
    "reasoning_tokens": "Part of completion_tokens spent reasoning (OpenAI "
    "`completion_tokens_details.reasoning_tokens`).",
    "output_audio_tokens": "Part of completion_tokens that is audio.",
    "output_image_tokens": "Part of completion_tokens that is images.",
}
# Of each usage detail sent: what it is a part of, and the rule (a 400 otherwise).
_PART = "Optional, default 0; at most its whole (and cached_tokens + cache_write_tokens at most prompt_tokens). "


def _detail_field(name: str) -> serializers.IntegerField:
    return serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=2_147_483_647, help_text=_PART + USAGE_HELP[name]
    )


def _number(value: Any) -> float | None:
    return float(value) if value is not None else None


def trace_json(trace: Trace, *, full: bool = True) -> dict[str, Any]:
    """A stored trace as the API shows it. ``full`` adds input, output and the routing decisions."""
    body: dict[str, Any] = {
        "id": trace.trace_id,
        "run_id": trace.run_id or trace.trace_id,
        "parent_id": trace.parent_id or None,
        "kind": trace.kind,
        "name": trace.name,
        "model": trace.model,
        "provider": trace.provider,
        "prompt_tokens": trace.prompt_tokens,
        "completion_tokens": trace.completion_tokens,
        "total_tokens": trace.total_tokens,
        **TokenDetails.of(trace).as_dict(),
        "latency_ms": trace.latency_ms,
        "time_to_first_token_ms": trace.time_to_first_token_ms,
        "timestamp": iso(trace.timestamp),
        "received_at": iso(trace.received_at),
        "status": trace.status,
        "error": {"type": trace.error_type, "message": trace.error_message}
        if (trace.error_type or trace.error_message)
        else None,
        "tags": list(trace.tags or ()),
        "metadata": trace.metadata or {},
        "environment": trace.environment,
        "service_name": trace.service_name,
        "session_id": trace.session_id,
        "user_id": trace.user_id,
        "cost": _number(trace.cost),
        "client_cost": _number(trace.client_cost),
        "unpriced": trace.unpriced,
        "usage_estimated": trace.usage_estimated,
        "price_source": trace.price_source,
        "price_version": trace.price_version,
        "source": trace.source,
        "destinations": list(trace.destinations or ()),
        "pii": trace.pii,
    }
    if full:
        body["input"] = trace.input
        body["output"] = trace.output
        body["routing"] = list(trace.routing or ())
    return body


def delivery_json(delivery: Any) -> dict[str, Any]:
    return {
        "id": delivery.pk,
        "destination": delivery.destination,
        "rule": delivery.rule_name,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "last_error": delivery.last_error,
        "last_status_code": delivery.last_status_code,
        "next_attempt_at": iso(delivery.next_attempt_at),
        "delivered_at": iso(delivery.delivered_at),
        "fallback_of": delivery.fallback_of.destination if delivery.fallback_of_id else None,
    }


def plant_json(plant: Plant) -> dict[str, str]:
    return {"name": plant.name, "tag": plant.tag}


# --- OpenAPI descriptions ----------------------------------------------------------------------


class TraceErrorSerializer(serializers.Serializer):
    type = serializers.CharField(required=False, allow_blank=True, max_length=200, help_text="e.g. RateLimitError")
    message = serializers.CharField(required=False, allow_blank=True)


@extend_schema_field(
    {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "type": {
                        "type": "string",
                        "maxLength": 200,
                        "nullable": True,
                        "description": "e.g. RateLimitError",
                    },
                    "message": {"type": "string", "nullable": True},
                },
            },
            {"type": "string", "description": "Just the message."},
        ],
        "nullable": True,
        "description": "What went wrong: {type, message}, or a message. Makes the default status `error`.",
    }
)
class TraceErrorInField(serializers.JSONField):
    pass


class TraceInSerializer(serializers.Serializer):
    """A trace (a span of a run) as clients send it. Only `model` is required, and only of calls (`kind`
    `llm`, the default, and `embedding`); null means "not given"; unknown fields are ignored."""

    id = serializers.RegexField(
        r"^[A-Za-z0-9._:-]{1,128}$",
        required=False,
        allow_null=True,
        help_text="Your id for the trace (1-128 of A-Z a-z 0-9 . _ : -). Sending it again returns the stored "
        "trace with 200 instead of storing a second one. Omitted: we assign `trc_` + a UUIDv7.",
    )
    run_id = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=128,
        help_text="The run (a tree of spans) this record belongs to: any text without control characters or "
        '"/", at most 128 characters (the OpenTelemetry trace id for OTLP). Absent, null or "": a run of its own, '
        "whose run_id is the record's id (docs/runs.md).",
    )
    parent_id = serializers.RegexField(
        r"^[A-Za-z0-9._:-]{0,128}$",
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="The `id` of this span's parent, another record of the same run (it may arrive later); "
        'null, "" or absent for a root. Needs `run_id`; must not equal `id`.',
    )
    kind = serializers.ChoiceField(
        choices=Kind.choices,
        required=False,
        allow_null=True,
        help_text="What the span is: `llm` (the default) and `embedding` are calls (priced, counted as calls "
        "in analytics, reports and alerts); the other kinds are the run's structure: never priced nor "
        "unpriced, their usage never estimated.",
    )
    name = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=200,
        help_text="The span's name (`invoke_agent planner`, `search_docs`, `chat gpt-4o`).",
    )
    model = serializers.CharField(
        max_length=200,
        required=False,
        help_text="Model name, e.g. gpt-4o. Required of `llm` and `embedding` spans; optional for the others.",
    )
    provider = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=64,
        help_text="Lowercase provider; inferred from the model.",
    )
    prompt_tokens = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=2_147_483_647)
    completion_tokens = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=2_147_483_647)
    total_tokens = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=2_147_483_647,
        help_text="Optional and derived: the stored total is always prompt_tokens + completion_tokens. When sent "
        "with both parts it must equal their sum, and it is never less than either part (a 400 otherwise).",
    )
    cached_tokens = _detail_field("cached_tokens")
    cache_write_tokens = _detail_field("cache_write_tokens")
    input_audio_tokens = _detail_field("input_audio_tokens")
    input_image_tokens = _detail_field("input_image_tokens")
    reasoning_tokens = _detail_field("reasoning_tokens")
    output_audio_tokens = _detail_field("output_audio_tokens")
    output_image_tokens = _detail_field("output_image_tokens")
    latency_ms = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=2_147_483_647)
    time_to_first_token_ms = serializers.FloatField(
        required=False, allow_null=True, min_value=0, max_value=2_147_483_647
    )
    timestamp = serializers.DateTimeField(
        required=False, allow_null=True, help_text="ISO 8601; default: when we received it."
    )
    status = serializers.ChoiceField(
        choices=Status.choices,
        required=False,
        allow_null=True,
        help_text="Default success, or error when `error` is given.",
    )
    error = TraceErrorInField(required=False, allow_null=True)
    input = serializers.JSONField(required=False, allow_null=True, help_text="Prompt or messages: any JSON.")
    output = serializers.JSONField(required=False, allow_null=True, help_text="Completion: any JSON.")
    tags = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        allow_null=True,
        max_length=50,
        help_text="At most 50.",
    )
    metadata = serializers.DictField(required=False, allow_null=True, help_text="At most 64 keys; values any JSON.")
    environment = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=64,
        help_text="Default: the API key's environment.",
    )
    service_name = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=200)
    session_id = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=200)
    user_id = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=200)
    cost = serializers.FloatField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=99_999_999,
        help_text="Cost you computed (USD); kept as client_cost beside ours.",
    )


class PiiFoundSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=["detect", "redact", "hash", "drop"])
    kinds = serializers.DictField(child=serializers.IntegerField(min_value=1), help_text='e.g. {"EMAIL": 2}')


class DecisionSerializer(serializers.Serializer):
    destination = serializers.CharField()
    rule = serializers.CharField()
    kept = serializers.BooleanField(help_text="False when sampled out.")
    rate = serializers.FloatField(help_text="Effective sample rate.")
    reason = serializers.CharField()


class TraceSerializer(serializers.Serializer):
    """A stored trace."""

    id = serializers.CharField(help_text="The trace id: yours, or `trc_` + UUIDv7.")
    run_id = serializers.CharField(help_text="The run it belongs to; its own `id` when it was sent without one.")
    parent_id = serializers.CharField(allow_null=True, help_text="The parent span's `id`; null for a root.")
    kind = serializers.ChoiceField(
        choices=Kind.choices, help_text="`llm` and `embedding` are calls; the rest structure."
    )
    name = serializers.CharField(allow_blank=True)
    model = serializers.CharField(allow_blank=True, help_text="Blank for a structural span sent without one.")
    provider = serializers.CharField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField(help_text=USAGE_HELP["cached_tokens"])
    cache_write_tokens = serializers.IntegerField(help_text=USAGE_HELP["cache_write_tokens"])
    input_audio_tokens = serializers.IntegerField(help_text=USAGE_HELP["input_audio_tokens"])
    input_image_tokens = serializers.IntegerField(help_text=USAGE_HELP["input_image_tokens"])
    reasoning_tokens = serializers.IntegerField(help_text=USAGE_HELP["reasoning_tokens"])
    output_audio_tokens = serializers.IntegerField(help_text=USAGE_HELP["output_audio_tokens"])
    output_image_tokens = serializers.IntegerField(help_text=USAGE_HELP["output_image_tokens"])
    latency_ms = serializers.IntegerField(allow_null=True)
    time_to_first_token_ms = serializers.IntegerField(allow_null=True)
    timestamp = serializers.DateTimeField()
    received_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=Status.choices)
    error = TraceErrorSerializer(allow_null=True)
    tags = serializers.ListField(child=serializers.CharField())
    metadata = serializers.DictField()
    environment = serializers.CharField(allow_blank=True, help_text="Default: the sending key's environment.")
    service_name = serializers.CharField(allow_blank=True)
    session_id = serializers.CharField(allow_blank=True)
    user_id = serializers.CharField(allow_blank=True)
    cost = serializers.FloatField(
        allow_null=True, help_text="USD from genai-prices; null when unpriced, and for a span that is no call."
    )
    client_cost = serializers.FloatField(allow_null=True, help_text="The cost the client reported, if any.")
    unpriced = serializers.BooleanField(
        help_text="A call whose model has no known price: cost is null, never a silent 0. Always false for a span "
        "that is no call (kind other than llm and embedding)."
    )
    usage_estimated = serializers.BooleanField(help_text="Token usage was missing and has been estimated.")
    price_source = serializers.CharField()
    price_version = serializers.CharField()
    source = serializers.ChoiceField(choices=Source.choices)  # type: ignore[assignment]  # a body field
    destinations = serializers.ListField(child=serializers.CharField(), help_text="Where it is being delivered.")
    pii = PiiFoundSerializer(
        allow_null=True,
        help_text="What the team's PII policy found before storage: counts per kind, never the values; "
        "null when the policy was off.",
    )


class TraceFullSerializer(TraceSerializer):
    input = serializers.JSONField(allow_null=True)
    output = serializers.JSONField(allow_null=True)
    routing = DecisionSerializer(many=True, help_text="Every routing decision, sampled-out ones included.")


class TraceDeliverySerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="Replay it with POST /api/v1/deliveries/{id}/replay.")
    destination = serializers.CharField()
    rule = serializers.CharField()
    status = serializers.ChoiceField(choices=["pending", "sending", "delivered", "failed", "dead"])
    attempts = serializers.IntegerField()
    last_error = serializers.CharField(allow_blank=True)
    last_status_code = serializers.IntegerField(allow_null=True)
    next_attempt_at = serializers.DateTimeField()
    delivered_at = serializers.DateTimeField(allow_null=True)
    fallback_of = serializers.CharField(allow_null=True, help_text="The destination this is a fallback for.")


class TraceDetailSerializer(TraceFullSerializer):
    deliveries = TraceDeliverySerializer(many=True, help_text="Delivery status per destination.")


# A class attribute named `data` would shadow Serializer.data, so the page is declared inline.
TracePageSerializer = inline_serializer(
    "TracePage",
    {
        "data": TraceSerializer(many=True, help_text="Newest first. Without input/output: GET one trace for those."),
        "next_cursor": serializers.CharField(
            allow_null=True, help_text="Pass as `cursor` for the next page; null at end."
        ),
        "newest_cursor": serializers.CharField(
            allow_null=True,
            help_text="Pass as `after` to get only newer traces (tailing); null on an older page (`cursor`).",
        ),
    },
)


@extend_schema_field(
    {"description": "A trace, as for POST /api/v1/traces (TraceIn). Anything else is refused on its own, in `results`."}
)
class BatchItemInField(serializers.JSONField):
    pass


class BatchInSerializer(serializers.Serializer):
    traces = serializers.ListField(
        child=BatchItemInField(),
        help_text="At most 1,000 traces and 10 MiB. Each item is validated on its own: see TraceIn for its fields.",
    )


class BatchItemSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="Position in the request's `traces`.")
    status = serializers.IntegerField(help_text="201 stored, 200 already stored under this id, 400/413 refused.")
    id = serializers.CharField(allow_null=True, help_text="The trace id; null when refused.")
    cost = serializers.FloatField(allow_null=True, required=False)
    errors = serializers.DictField(  # type: ignore[assignment]  # a body field, not Serializer.errors
        child=serializers.ListField(child=serializers.CharField()),
        allow_null=True,
        help_text="Field → messages when refused.",
    )


class BatchResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    existing = serializers.IntegerField()
    failed = serializers.IntegerField()
    results = BatchItemSerializer(many=True)


class PlantSerializer(serializers.Serializer):
    name = serializers.CharField()
    tag = serializers.CharField()
