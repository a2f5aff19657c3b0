"""What the routing API receives and sends.

Input validation is strict and all-or-nothing: every problem in a rule set is reported at once,
keyed by its path (``rules[2].condition``, ``rules[0].destinations[1].fallback[0].name``), and
nothing is stored unless everything is valid. Numbers must be JSON numbers and booleans JSON
booleans; unknown fields are refused (a typo such as ``sample-rate`` would otherwise be a rule that
silently samples nothing). The output-only fields a GET returns (``version``, ``created_at`` …)
may be sent back unchanged.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.fields import StrictBooleanField, StrictCharField, StrictFloatField, StrictIntegerField
from traces.serializers import TraceInSerializer

from .conditions import ConditionError, compile_condition
from .destinations import (
    MAX_TAG_LENGTH,
    MAX_TAGS,
    DestinationChecker,
)

MAX_RULES = 200
MAX_DESTINATIONS = 20
MAX_SAMPLING_RULES = 100
MAX_TEST_TRACES = 100
PRIORITY_RANGE = 1_000_000
RULE_OUTPUT_ONLY = frozenset({"created_at", "updated_at"})
SET_OUTPUT_ONLY = frozenset({"version", "updated_at", "updated_by"})

# ---------------------------------------------------------------------------------------------
# Strict JSON fields: DRF would read "0.5" as a number and "yes" as true.


def _tags_field(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=MAX_TAG_LENGTH), max_length=MAX_TAGS, default=list, help_text=help_text
    )


def _sample_rate_field(help_text: str, **kwargs: Any) -> StrictFloatField:
    return StrictFloatField(min_value=0.0, max_value=1.0, help_text=help_text, **kwargs)


CONDITION_SCHEMA = {
    "oneOf": [
        {"type": "string", "description": 'A CEL expression: `model == "gpt-4" && cost > 0.05`.'},
        {
            "type": "object",
            "additionalProperties": True,
            "description": 'Every key must hold: `{"model": "gpt-4*", "cost": ">0.05", "error": true, '
            '"metadata.env": "prod"}`.',
        },
    ],
    "nullable": True,
}
DESTINATION_OBJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {
            "type": "string",
            "description": "An integration's name, or a platform (`langfuse`, `webhook` …) meaning the team's first "
            "enabled integration of it. Give `name` or `platform`.",
        },
        "platform": {"type": "string", "description": "The spec's spelling of a platform destination."},
        "sample_rate": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "default": 1.0,
            "description": "Fraction of matching traces sent here.",
        },
        "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags added to traces sent here."},
        "url": {
            "type": "string",
            "format": "uri",
            "description": "Webhook destinations only: send to this URL (an ad-hoc webhook).",
        },
        "fallback": {
            "type": "array",
            "items": {"type": "object", "description": "A destination of the same shape (no sample_rate)."},
            "description": "Tried in order when delivery here fails for good.",
        },
    },
}
DESTINATION_SCHEMA = {
    "oneOf": [
        {"type": "string", "description": "An integration name or platform (`langfuse`)."},
        DESTINATION_OBJECT_SCHEMA,
    ]
}


@extend_schema_field(CONDITION_SCHEMA)
class ConditionField(serializers.JSONField):
    """A condition in either spelling; compiled (and its errors placed) in the rule's validate()."""


@extend_schema_field(DESTINATION_SCHEMA)
class DestinationInputField(serializers.JSONField):
    """A destination name or object; checked in the rule's validate(), where the path is known."""


# ---------------------------------------------------------------------------------------------
# Destinations


class DestinationOutSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="Integration name or canonical platform.")
    sample_rate = serializers.FloatField()
    tags = serializers.ListField(child=serializers.CharField())
    url = serializers.URLField(required=False)
    fallback = serializers.ListField(child=serializers.DictField(), help_text="Destinations of the same shape.")


def _checker(context: Mapping[str, Any]) -> DestinationChecker:
    checker = context.get("destination_checker")
    if checker is None:
        raise RuntimeError("the serializer needs a 'destination_checker' in its context")
    return checker


def nul_paths(data: Any, prefix: str = "") -> list[str]:
    """Where the JSON holds a NUL character (Postgres text and jsonb cannot store one)."""
    found: list[str] = []
    if isinstance(data, str):
        if "\x00" in data:
            found.append(prefix)
    elif isinstance(data, Mapping):
        for key, value in data.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if "\x00" in str(key):
                found.append(path)
            found.extend(nul_paths(value, path))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found.extend(nul_paths(value, f"{prefix}[{i}]"))
    return found


def _refuse_nul(data: Any) -> None:
    paths = nul_paths(data)
    if paths:
        raise serializers.ValidationError({path: ["Must not contain NUL characters."] for path in paths})


def _refuse_unknown(data: Any, fields: Mapping[str, Any], allowed_extra: frozenset[str], what: str) -> None:
    if not isinstance(data, Mapping):
        return
    unknown = [str(k) for k in data if k not in fields and k not in allowed_extra]
    if unknown:
        known = sorted(fields)
        raise serializers.ValidationError(
            {
                k: [
                    f"Unknown field of {what}."
                    + (f" Did you mean '{m[0]}'?" if (m := difflib.get_close_matches(k, known, n=1)) else "")
                ]
                for k in unknown
            }
        )


def _condition_value(attrs: Mapping[str, Any], errors: dict[str, list[str]]) -> tuple[str, Any]:
    """(key used, condition) for a rule: `condition` and `conditions` both take either spelling."""
    given = [k for k in ("conditions", "condition") if attrs.get(k) not in (None, "", {})]
    if len(given) == 2:
        errors.setdefault("condition", []).append("Give 'condition' or 'conditions', not both.")
        return "condition", None
    key = given[0] if given else "condition"
    return key, attrs.get(key)


def compile_or_collect(value: Any, key: str, errors: dict[str, list[str]]) -> None:
    try:
        compile_condition(value)
    except ConditionError as exc:
        errors.setdefault(f"{key}.{exc.path}" if exc.path else key, []).append(exc.message)


# ---------------------------------------------------------------------------------------------
# Rules


class RoutingRuleSerializer(serializers.Serializer):
    id = StrictIntegerField(
        required=False, help_text="Keep this stored rule (its id from GET) on PUT; omit for a new rule."
    )
    name = StrictCharField(max_length=200, help_text="Unique within the team.")
    description = StrictCharField(required=False, allow_blank=True, max_length=4000, default="")
    priority = StrictIntegerField(
        required=False,
        min_value=-PRIORITY_RANGE,
        max_value=PRIORITY_RANGE,
        help_text="Lower runs first. Default: the rule's position in the list (1, 2, 3 …). Equal priorities run "
        "in the order the rules were created.",
    )
    enabled = StrictBooleanField(default=True)
    conditions = ConditionField(
        required=False, allow_null=True, help_text="The condition (object or CEL string). No condition: every trace."
    )
    condition = ConditionField(required=False, allow_null=True, help_text="Same as `conditions`: either spelling.")
    destination = DestinationInputField(required=False, help_text="Shorthand for one destination.")
    destinations = serializers.ListField(
        child=DestinationInputField(),
        required=False,
        max_length=MAX_DESTINATIONS,
        help_text="Where matching traces go. An empty list (with `stop`) drops matching traces.",
    )
    sample_rate = _sample_rate_field("Fraction of matching traces sent by this rule (0-1).", default=1.0)
    tags = _tags_field("Tags added to every trace this rule sends (and to its fallbacks).")
    stop = StrictBooleanField(default=False, help_text="A matching rule with stop ends evaluation.")

    def to_internal_value(self, data: Any) -> Any:
        _refuse_unknown(data, self.fields, RULE_OUTPUT_ONLY, "a rule")
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors: dict[str, list[str]] = {}
        key, condition = _condition_value(attrs, errors)
        if not errors:
            compile_or_collect(condition, key, errors)

        checker = _checker(self.context)
        if "destination" in attrs and "destinations" in attrs:
            errors.setdefault("destination", []).append("Give 'destination' or 'destinations', not both.")
            items: list[tuple[str, Any]] = []
        elif "destination" in attrs:
            items = [("destination", attrs["destination"])]
        elif "destinations" in attrs:
            items = [(f"destinations[{i}]", d) for i, d in enumerate(attrs["destinations"])]
        else:
            errors.setdefault("destinations", []).append(
                "A rule needs 'destination' or 'destinations' (an empty list drops matching traces)."
            )
            items = []
        destinations: list[dict[str, Any]] = []
        seen: dict[str, str] = {}
        for path, raw in items:
            cleaned = checker.clean(raw, path, errors)
            if cleaned is None:
                continue
            if cleaned["name"] in seen:
                errors.setdefault(path, []).append(
                    f"'{cleaned['name']}' is already a destination of this rule ({seen[cleaned['name']]})."
                )
                continue
            seen[cleaned["name"]] = path
            destinations.append(cleaned)
        if errors:
            raise serializers.ValidationError(errors)

        out: dict[str, Any] = {
            "name": attrs["name"].strip(),
            "description": attrs.get("description", ""),
            "priority": attrs.get("priority"),
            "enabled": attrs["enabled"],
            "conditions": condition if isinstance(condition, Mapping) and condition else None,
            "condition": condition if isinstance(condition, str) and condition.strip() else "",
            "destinations": destinations,
            "sample_rate": attrs["sample_rate"],
            "tags": list(dict.fromkeys(attrs["tags"])),
            "stop": attrs["stop"],
        }
        if "id" in attrs:
            out["id"] = attrs["id"]
        if not out["name"]:
            raise serializers.ValidationError({"name": ["Must not be blank."]})
        return out


class RoutingRuleSetSerializer(serializers.Serializer):
    """PUT body: ``{"rules": [...]}`` (a bare list is read the same way)."""

    rules = RoutingRuleSerializer(many=True, max_length=MAX_RULES, allow_empty=True)  # type: ignore[call-arg]

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, list):
            data = {"rules": data}
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"": ['The body must be {"rules": [...]} or a list of rules.']})
        _refuse_nul(data)
        _refuse_unknown(data, self.fields, SET_OUTPUT_ONLY, "the rule set")
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        rules: list[dict[str, Any]] = attrs["rules"]
        errors: dict[str, list[str]] = {}
        names: dict[str, int] = {}
        ids: dict[int, int] = {}
        team_rule_ids: set[int] = set(self.context.get("team_rule_ids", ()))
        for i, rule in enumerate(rules):
            if rule["name"] in names:
                errors.setdefault(f"rules[{i}].name", []).append(
                    f"'{rule['name']}' is also the name of rules[{names[rule['name']]}]; names are unique."
                )
            names.setdefault(rule["name"], i)
            if "id" in rule:
                if rule["id"] not in team_rule_ids:
                    errors.setdefault(f"rules[{i}].id", []).append(
                        f"No rule {rule['id']} in this team; omit 'id' for a new rule."
                    )
                elif rule["id"] in ids:
                    errors.setdefault(f"rules[{i}].id", []).append(f"rules[{ids[rule['id']]}] has this id too.")
                ids.setdefault(rule["id"], i)
            if rule["priority"] is None:
                rule["priority"] = i + 1
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class RoutingRuleOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    priority = serializers.IntegerField()
    enabled = serializers.BooleanField()
    conditions = serializers.JSONField(allow_null=True, help_text="The object-form condition, or null.")
    condition = serializers.CharField(allow_null=True, help_text="The CEL condition, or null.")
    destinations = DestinationOutSerializer(many=True)
    sample_rate = serializers.FloatField()
    tags = serializers.ListField(child=serializers.CharField())
    stop = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class RoutingRuleSetOutSerializer(serializers.Serializer):
    version = serializers.IntegerField(help_text='Moves on every PUT; the ETag is `"rules-v<version>"`.')
    updated_at = serializers.DateTimeField(allow_null=True)
    updated_by = serializers.CharField(help_text="Who stored this version (`key:<prefix>`, `user:<name>`).")
    rules = RoutingRuleOutSerializer(many=True, help_text="In evaluation order.")


# ---------------------------------------------------------------------------------------------
# Sampling


class SamplingRuleSerializer(serializers.Serializer):
    condition = ConditionField(help_text="CEL string (or an object condition) selecting the traces.")
    sample_rate = _sample_rate_field("The policy rate for matching traces (0-1).")

    def to_internal_value(self, data: Any) -> Any:
        _refuse_unknown(data, self.fields, frozenset(), "a sampling rule")
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
    default_sample_rate = _sample_rate_field("The rate for traces no sampling rule matches (0-1).", default=1.0)
    rules = SamplingRuleSerializer(  # type: ignore[call-arg]
        many=True, default=list, max_length=MAX_SAMPLING_RULES, help_text="The first matching rule sets the rate."
    )

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"": ['The body must be {"default_sample_rate": …, "rules": […]}.']})
        _refuse_nul(data)
        _refuse_unknown(data, self.fields, frozenset({"version", "updated_at"}), "the sampling policy")
        return super().to_internal_value(data)


class SamplingRuleOutSerializer(serializers.Serializer):
    condition = serializers.JSONField(help_text="As given: a CEL string or an object.")
    sample_rate = serializers.FloatField()


class SamplingPolicyOutSerializer(serializers.Serializer):
    default_sample_rate = serializers.FloatField()
    rules = SamplingRuleOutSerializer(many=True)
    version = serializers.IntegerField(help_text='Moves on every PUT; the ETag is `"sampling-v<version>"`.')
    updated_at = serializers.DateTimeField(allow_null=True)


# ---------------------------------------------------------------------------------------------
# Dry run


class RoutingTestRequestSerializer(serializers.Serializer):
    """The OpenAPI shape of a dry run (the view reads the body itself: a bare trace is allowed too)."""

    trace = TraceInSerializer(required=False, help_text="One trace (or send the trace itself as the body).")
    traces = TraceInSerializer(many=True, required=False, help_text=f"Up to {MAX_TEST_TRACES} traces.")
    rules = RoutingRuleSerializer(
        many=True, required=False, help_text="Try these rules instead of the stored ones (nothing is stored)."
    )
    sampling = SamplingPolicySerializer(required=False, help_text="Try this sampling policy instead of the stored one.")


class RoutingDecisionSerializer(serializers.Serializer):
    destination = serializers.CharField()
    rule = serializers.CharField(help_text="The rule that decided.")
    kept = serializers.BooleanField(help_text="False: sampled out.")
    rate = serializers.FloatField(help_text="Effective rate: policy × rule × destination.")
    reason = serializers.CharField()


class RoutingTestDecisionSerializer(RoutingDecisionSerializer):
    spec = DestinationOutSerializer(help_text="The destination as it would be delivered: tags, url, fallbacks.")


class RuleEvaluationSerializer(serializers.Serializer):
    rule = serializers.CharField()
    priority = serializers.IntegerField()
    matched = serializers.BooleanField(allow_null=True, help_text="null: not evaluated (disabled, or after a stop).")
    reason = serializers.CharField()


class ConditionErrorSerializer(serializers.Serializer):
    rule = serializers.CharField()
    error = serializers.CharField()


class SamplingDecisionSerializer(serializers.Serializer):
    rate = serializers.FloatField()
    reason = serializers.CharField()


class RoutingTestResultSerializer(serializers.Serializer):
    trace_id = serializers.CharField()
    trace = serializers.DictField(help_text="What conditions saw: the normalised trace with its computed cost.")
    destinations = serializers.ListField(child=serializers.CharField(), help_text="Where the trace would go.")
    sampled_out = RoutingTestDecisionSerializer(many=True)
    decisions = RoutingTestDecisionSerializer(many=True)
    matched_rules = serializers.ListField(child=serializers.CharField())
    sample_point = serializers.FloatField(help_text="The trace's fixed number in [0, 1), from its id.")
    policy = SamplingDecisionSerializer()
    evaluations = RuleEvaluationSerializer(many=True)
    errors = ConditionErrorSerializer(  # type: ignore[assignment]  # a field named like Serializer.errors
        many=True, help_text="Conditions that failed at run time (no match)."
    )


class RoutingTestResponseSerializer(serializers.Serializer):
    rules_version = serializers.IntegerField(allow_null=True, help_text="null when the request brought its rules.")
    sampling_version = serializers.IntegerField(allow_null=True)
    results = RoutingTestResultSerializer(many=True)
