"""Alerts API shapes, for the OpenAPI document (alerts.definition does the checking).

Request shapes are closed (``closed = True``: unknown fields are refused, as `parse_alert`
refuses them), and the window is one of two exact objects, so what the schema allows is what the
server takes, but for the rules it cannot state (docs/api.md, "Rules beyond the schema")."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.fields import NAME_PATTERN

from .definition import MAX_EMAILS, MAX_TEXT, MAX_THRESHOLD, MAX_URL, MAX_WEBHOOKS, MAX_WINDOW_MINUTES, MIN_THRESHOLD
from .models import Period

WINDOW_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "title": "Rolling window",
            "additionalProperties": False,
            "required": ["type", "minutes"],
            "properties": {
                "type": {"type": "string", "enum": ["rolling"]},
                "minutes": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_WINDOW_MINUTES,
                    "description": "The minutes before each evaluation (at most 31 days).",
                },
            },
        },
        {
            "type": "object",
            "title": "Calendar window",
            "additionalProperties": False,
            "required": ["type", "period"],
            "properties": {
                "type": {"type": "string", "enum": ["calendar"]},
                "period": {
                    "type": "string",
                    "enum": list(Period.values),
                    "description": "The UTC day, week (from Monday) or month.",
                },
            },
        },
    ]
}
THRESHOLD_SCHEMA = {
    "type": "number",
    "minimum": float(MIN_THRESHOLD),
    "maximum": float(MAX_THRESHOLD),
    "exclusiveMaximum": True,
    "description": "Fires when the window's value reaches it: USD for cost, a count for tokens. Kept to 10 "
    "decimal places, so at least 0.0000000001 and below 10^13.",
}


@extend_schema_field(WINDOW_SCHEMA)
class WindowField(serializers.JSONField):
    pass


@extend_schema_field(THRESHOLD_SCHEMA)
class ThresholdField(serializers.FloatField):
    pass


def _text(help_text: str = "") -> serializers.CharField:
    return serializers.CharField(
        max_length=MAX_TEXT, required=False, allow_blank=True, allow_null=True, help_text=help_text or None
    )


class ScopeSerializer(serializers.Serializer):
    closed = True
    user_id = _text()
    model = _text(help_text="A model name; may end in * (a prefix).")
    tag = _text()
    environment = _text()
    service_name = _text()
    integration = _text()


class WebhookSerializer(serializers.Serializer):
    closed = True
    url = serializers.URLField(max_length=MAX_URL, help_text="http(s); must pass the outbound URL guard.")


class NotifySerializer(serializers.Serializer):
    closed = True
    emails = serializers.ListField(
        child=serializers.EmailField(), required=False, allow_null=True, max_length=MAX_EMAILS
    )
    webhooks = serializers.ListField(
        child=WebhookSerializer(), required=False, allow_null=True, max_length=MAX_WEBHOOKS
    )


class AlertInSerializer(serializers.Serializer):
    closed = True
    name = serializers.RegexField(
        NAME_PATTERN, max_length=MAX_TEXT, help_text="1-200 characters, no control characters."
    )
    metric = serializers.ChoiceField(
        choices=["cost", "tokens", "delivery_failure_rate", "dead_letters", "oldest_pending_s"],
        help_text="cost: USD of priced traces; tokens: total tokens. Of one integration's deliveries (scope "
        '`{"integration": "<name>"}`, required): delivery_failure_rate (failed or dead ÷ settled, of the '
        "deliveries created in the window, a fraction 0-1), dead_letters (dead-lettered in the window), "
        "oldest_pending_s (the age of its oldest waiting delivery now, whatever the window).",
    )
    threshold = ThresholdField()
    window = WindowField()
    scope = ScopeSerializer(required=False, allow_null=True, help_text="Each key optional; null or empty: any.")
    notify = NotifySerializer(required=False, allow_null=True, help_text="null: nobody (as {}).")
    enabled = serializers.BooleanField(required=False, default=True)


class AlertOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    metric = serializers.ChoiceField(
        choices=["cost", "tokens", "unpriced", "delivery_failure_rate", "dead_letters", "oldest_pending_s"]
    )
    threshold = serializers.FloatField()
    window = WindowField()
    scope = serializers.DictField(child=serializers.CharField(), help_text="The keys set (user_id, model, tag, …).")
    notify = NotifySerializer()
    signing_secret = serializers.CharField(
        help_text="Signs webhook notifications (X-Tracerelay-Signature, as the webhook destination). "
        "In full only in the response that creates the alert; masked after."
    )
    enabled = serializers.BooleanField()
    builtin = serializers.CharField(allow_null=True, help_text="`unpriced` for the built-in alert.")
    state = serializers.ChoiceField(choices=["ok", "firing"])
    last_value = serializers.FloatField(allow_null=True)
    last_evaluated_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class AlertListSerializer(serializers.Serializer):
    data = AlertOutSerializer(many=True)  # type: ignore[assignment]


class EventWindowSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class EventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    type = serializers.ChoiceField(choices=["fired", "resolved"])
    at = serializers.DateTimeField()
    value = serializers.FloatField()
    threshold = serializers.FloatField()
    window = EventWindowSerializer()
    notifications = serializers.DictField(
        help_text='What the email and each webhook answered: `email` is "sent", "failed: <error>" or, with no '
        'mail server configured, "not sent: no mail server is configured (EMAIL_URL); written to the log".'
    )


class EventListSerializer(serializers.Serializer):
    data = EventSerializer(many=True)  # type: ignore[assignment]
