"""The input serializers of an integration: one set of rules for the API and the dashboard's forms
(which turn their fields into the same document and show these messages next to each field)."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.fields import StrictBooleanField, StrictCharField

from .registry import PLATFORMS, canonical_platform, platform_names

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._:/@-]{0,99}$")
MAX_TAGS = 50
MAX_MAPPINGS = 64


@extend_schema_field(
    {
        "type": "string",
        "enum": sorted(platform_names()),
        "description": "The destination platform (aliases such as `otlp` name the same exporter).",
    }
)
class PlatformField(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        platform = canonical_platform(value)
        if platform is None:
            raise serializers.ValidationError(
                f"Unknown platform {value!r}; one of {', '.join(sorted(platform_names()))}."
            )
        return platform


class RetryPolicySerializer(serializers.Serializer):
    """How failed deliveries are retried. Beyond the ranges stated here: `max_delay_s` must be at least
    `base_delay_s` (a 400 on `retry_policy.max_delay_s` otherwise); either one left out keeps the default."""

    closed = True  # unknown fields are refused (below): additionalProperties false in the schema

    max_attempts = serializers.IntegerField(required=False, min_value=1, max_value=50)
    base_delay_s = serializers.FloatField(required=False, min_value=0.1, max_value=3600)
    max_delay_s = serializers.FloatField(required=False, min_value=1, max_value=86400)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {k: [f"Unknown retry policy field; known: {', '.join(self.fields)}."] for k in unknown}
                )
        return dict(super().to_internal_value(data))


_OPERATION = {
    "type": "object",
    "required": ["op", "path"],
    "properties": {
        "op": {"type": "string", "enum": ["drop", "truncate", "rename", "set", "hash"]},
        "path": {
            "type": "string",
            "description": "Dot-separated, from input, output, metadata, user_id, session_id, environment, "
            "service_name, model, provider, error_message, error_type or tags; `*` for every key.",
            "examples": ["metadata.customer"],
        },
        "max_chars": {"type": "integer", "minimum": 1, "maximum": 1000000, "description": "truncate"},
        "to": {"type": "string", "description": "rename: the new path (inside input, output or metadata)"},
        "value": {"description": "set: any JSON (a string for text fields, a list of strings for tags)"},
    },
    "additionalProperties": False,
}

# The settings every integration's config carries beside its platform's fields (integrations.options).
CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Platform settings: project concept `{apiKey, projectId}`, key pair "
    "`{publicKey, secretKey, host}`, webhook `{url, headers}`, plus each platform's own fields "
    "(docs/destinations/<platform>.md). Secrets are stored encrypted and shown masked. Beside them, the "
    "settings of every integration below (docs/destinations/index.md); left out means the default, "
    "null in a PATCH removes one; a bad value is a 400 naming `config.<setting>`.",
    "properties": {
        "environments": {
            "type": "array",
            "items": {"type": "string", "maxLength": 100},
            "maxItems": 50,
            "description": "The environments this integration receives; empty or absent: all. A trace of "
            "another environment is dropped (delivery status `dropped`, reason `environment`).",
        },
        "environment_map": {
            "type": "object",
            "additionalProperties": {"type": "string", "maxLength": 100},
            "description": "Our environment name → the destination's.",
        },
        "send_user_id": {"type": "boolean", "default": True, "description": "false: user ids are not sent."},
        "send_session_id": {"type": "boolean", "default": True, "description": "false: session ids are not sent."},
        "transform": {
            "type": "array",
            "items": _OPERATION,
            "maxItems": 50,
            "description": "Operations applied in order to the trace as it is sent here (after the PII "
            "policy, before the exporter encodes); an error names the operation (`operation 2 (truncate): …`).",
        },
        "quota": {
            "type": "object",
            "properties": {
                "max_per_minute": {"type": "integer", "minimum": 1, "maximum": 100000},
                "max_per_day": {"type": "integer", "minimum": 1, "maximum": 1000000000},
                "over_quota": {"type": "string", "enum": ["delay", "sample", "drop"], "default": "delay"},
            },
            "additionalProperties": False,
            "description": "Traces sent per minute (any 60 s) and per UTC day, counted across every delivery "
            "worker; over it: delay (held), sample (a consistent fraction kept) or drop (recorded as "
            "dropped, reason `quota`, replayable). At least one limit.",
        },
        "response_validation": {
            "type": "object",
            "properties": {
                "status": {"type": "array", "items": {"type": "integer", "minimum": 200, "maximum": 299}},
                "json_path": {"type": "string", "description": "Must be absent or empty in the answer's JSON."},
                "body_must_contain": {"type": "string", "maxLength": 1000},
            },
            "additionalProperties": False,
            "description": "Webhook only: when a 2xx answer still counts as a failure (retried, then dead-lettered "
            "with the answer as the reason).",
        },
    },
    "additionalProperties": True,
}


@extend_schema_field(CONFIG_SCHEMA)
class ConfigField(serializers.DictField):
    """The integration's ``config``: any object here; the platform's exporter and
    `options.schema` check it (services.clean_platform_config)."""


class IntegrationInSerializer(serializers.Serializer):
    name = StrictCharField(max_length=100, help_text="Unique in the team; rules name integrations by it.")
    platform = PlatformField(help_text=f"One of {', '.join(PLATFORMS)} (also `custom-webhook`, `wandb`).")
    config = ConfigField()
    default_tags = serializers.ListField(
        child=StrictCharField(max_length=200), required=False, default=list, max_length=MAX_TAGS
    )
    metadata_mapping = serializers.DictField(
        child=StrictCharField(max_length=200, allow_null=True, allow_blank=True),
        required=False,
        default=dict,
        help_text="Our metadata key → the destination's key; null drops the key. Others pass unchanged.",
    )
    timeout_s = serializers.FloatField(required=False, default=10.0, min_value=0.5, max_value=120)
    retry_policy = RetryPolicySerializer(required=False, default=dict)
    enabled = StrictBooleanField(required=False, default=True)

    def validate_name(self, value: str) -> str:
        value = value.strip()
        if not NAME_PATTERN.match(value):
            raise serializers.ValidationError(
                "Start with a letter or digit; then letters, digits, spaces and . _ : / @ - (at most 100)."
            )
        return value

    def validate_metadata_mapping(self, value: dict[str, Any]) -> dict[str, str | None]:
        if len(value) > MAX_MAPPINGS:
            raise serializers.ValidationError(f"At most {MAX_MAPPINGS} mappings.")
        if any(not k.strip() or len(k) > 200 for k in value):
            raise serializers.ValidationError("Keys must be 1-200 characters.")
        return {k: (v or None) for k, v in value.items()}

    def validate_default_tags(self, value: list[str]) -> list[str]:
        tags = [t.strip() for t in value]
        if any(not t for t in tags):
            raise serializers.ValidationError("Tags must not be empty.")
        return list(dict.fromkeys(tags))

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        policy = attrs.get("retry_policy") or {}
        if "base_delay_s" in policy and "max_delay_s" in policy and policy["max_delay_s"] < policy["base_delay_s"]:
            raise serializers.ValidationError({"retry_policy": {"max_delay_s": ["Must be at least base_delay_s."]}})
        return attrs


class IntegrationPatchSerializer(IntegrationInSerializer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["partial"] = True
        super().__init__(*args, **kwargs)
