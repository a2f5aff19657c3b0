"""The sampling policy: what PUT /routing/sampling reads, and what GET returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from .fields import (
    MAX_SAMPLING_RULES,
    ConditionField,
    compile_or_collect,
    echoed_field,
    refuse_nul,
    refuse_unknown,
    sample_rate_field,
)


class SamplingRuleSerializer(serializers.Serializer):
    closed = True  # unknown fields are refused: additionalProperties false in the schema

    condition = ConditionField(help_text="CEL string (or an object condition) selecting the traces.")
    sample_rate = sample_rate_field("The policy rate for matching traces (0-1).")

    def to_internal_value(self, data: Any) -> Any:
        refuse_unknown(data, self.fields, "a sampling rule")
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors: dict[str, list[str]] = {}
        condition = attrs.get("condition")
        if condition in (None, "", {}) or (isinstance(condition, str) and not condition.strip()):
            errors["condition"] = ["A sampling rule needs a condition; default_sample_rate covers the rest."]
        else:
            compile_or_collect(condition, "condition", errors)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class SamplingPolicySerializer(serializers.Serializer):
    closed = True

    default_sample_rate = sample_rate_field("The rate for traces no sampling rule matches (0-1).", default=1.0)
    rules = SamplingRuleSerializer(  # type: ignore[call-arg]
        many=True, default=list, max_length=MAX_SAMPLING_RULES, help_text="The first matching rule sets the rate."
    )
    version = echoed_field()
    updated_at = echoed_field()

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"": ['The body must be {"default_sample_rate": …, "rules": […]}.']})
        refuse_nul(data)
        refuse_unknown(data, self.fields, "the sampling policy")
        return super().to_internal_value(data)


class SamplingRuleOutSerializer(serializers.Serializer):
    condition = serializers.JSONField(help_text="As given: a CEL string or an object.")
    sample_rate = serializers.FloatField()


class SamplingPolicyOutSerializer(serializers.Serializer):
    default_sample_rate = serializers.FloatField()
    rules = SamplingRuleOutSerializer(many=True)
    version = serializers.IntegerField(help_text='Moves on every PUT; the ETag is `"sampling-v<version>"`.')
    updated_at = serializers.DateTimeField(allow_null=True)
