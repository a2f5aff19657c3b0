"""Serializers that document the PII API in the OpenAPI schema. Validation is `validation.clean_policy`
(shared with the settings page), so these never validate or save anything themselves."""

from __future__ import annotations

from rest_framework import serializers

from .detection import BUILTIN_KINDS
from .models import Mode


class PiiModeSerializer(serializers.Serializer):
    closed = True  # `validation.clean_policy` refuses unknown fields: additionalProperties false in the schema

    mode = serializers.ChoiceField(choices=Mode.choices)


class PiiCustomPatternSerializer(serializers.Serializer):
    closed = True

    name = serializers.RegexField(r"^[A-Z][A-Z0-9_]{0,39}$", help_text="The kind its findings are reported as.")
    regex = serializers.CharField(max_length=500, help_text="RE2 syntax: no backreferences or lookaround.")


class PiiPolicySerializer(serializers.Serializer):
    closed = True

    stored = PiiModeSerializer(required=False, help_text="Applied before a trace is stored. Default off.")
    destinations = serializers.DictField(
        child=PiiModeSerializer(),
        required=False,
        allow_null=True,
        help_text="Integration name → mode applied before export to it. A destination without an entry gets the "
        "trace as stored.",
    )
    kinds = serializers.ListField(
        child=serializers.ChoiceField(choices=BUILTIN_KINDS),
        required=False,
        allow_null=True,
        help_text="Built-in kinds the policy acts on; default all. Custom patterns always apply.",
    )
    custom_patterns = PiiCustomPatternSerializer(many=True, required=False, allow_null=True)


class PiiPolicyOutSerializer(PiiPolicySerializer):
    version = serializers.IntegerField()
    updated_at = serializers.DateTimeField(allow_null=True)
    updated_by = serializers.CharField()
    applies_to = serializers.CharField(help_text="Which traces the policy applies to.")


class PiiScanSerializer(serializers.Serializer):
    text = serializers.CharField(
        help_text="Up to 100,000 characters (more is a 413); empty text has no findings.",
        trim_whitespace=False,
        allow_blank=True,
    )


class PiiFindingSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="A built-in kind or a custom pattern's name.")
    start = serializers.IntegerField(help_text="Character offset (not bytes) of the first character.")
    end = serializers.IntegerField(help_text="Character offset just past the last character.")


class PiiScanResultSerializer(serializers.Serializer):
    findings = PiiFindingSerializer(many=True)
    redacted = serializers.CharField(help_text="The text with each finding replaced by [KIND].")
