"""The rule set: what PUT /routing/rules (and the per-service PUT) reads, and what GETs return."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from config.fields import StrictBooleanField, StrictCharField, StrictIntegerField

from .fields import (
    MAX_DESTINATIONS,
    MAX_RULES,
    PRIORITY_RANGE,
    ConditionField,
    DestinationInputField,
    compile_or_collect,
    condition_value,
    destination_checker,
    echoed_field,
    refuse_nul,
    refuse_unknown,
    sample_rate_field,
    tags_field,
)


class DestinationOutSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="Integration name or canonical platform.")
    sample_rate = serializers.FloatField()
    tags = serializers.ListField(child=serializers.CharField())
    url = serializers.URLField(required=False)
    fallback = serializers.ListField(child=serializers.DictField(), help_text="Destinations of the same shape.")


class RoutingRuleSerializer(serializers.Serializer):
    closed = True  # unknown fields are refused: additionalProperties false in the schema

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
    sample_rate = sample_rate_field("Fraction of matching traces sent by this rule (0-1).", default=1.0)
    tags = tags_field("Tags added to every trace this rule sends (and to its fallbacks).")
    stop = StrictBooleanField(default=False, help_text="A matching rule with stop ends evaluation.")
    created_at = echoed_field()
    updated_at = echoed_field()
    service = echoed_field()

    def to_internal_value(self, data: Any) -> Any:
        refuse_unknown(data, self.fields, "a rule")
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors: dict[str, list[str]] = {}
        key, condition = condition_value(attrs, errors)
        if not errors:
            compile_or_collect(condition, key, errors)

        checker = destination_checker(self.context)
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

    closed = True

    rules = RoutingRuleSerializer(many=True, max_length=MAX_RULES, allow_empty=True)  # type: ignore[call-arg]
    version = echoed_field()
    updated_at = echoed_field()
    updated_by = echoed_field()

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, list):
            data = {"rules": data}
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"": ['The body must be {"rules": [...]} or a list of rules.']})
        refuse_nul(data)
        refuse_unknown(data, self.fields, "the rule set")
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        rules: list[dict[str, Any]] = attrs["rules"]
        errors: dict[str, list[str]] = {}
        names: dict[str, int] = {}
        ids: dict[int, int] = {}
        team_rule_ids: set[int] = set(self.context.get("team_rule_ids", ()))
        names_taken: Mapping[str, str] = self.context.get("names_taken", {})
        service = self.context.get("service")
        scope = f"of service '{service}'" if service else "in this team"
        for i, rule in enumerate(rules):
            if rule["name"] in names:
                errors.setdefault(f"rules[{i}].name", []).append(
                    f"'{rule['name']}' is also the name of rules[{names[rule['name']]}]; names are unique."
                )
            names.setdefault(rule["name"], i)
            if rule["name"] in names_taken:
                owner = names_taken[rule["name"]]
                held_by = f"service '{owner}'" if owner else "the team's rule set"
                errors.setdefault(f"rules[{i}].name", []).append(
                    f"'{rule['name']}' is the name of a rule owned by {held_by}; names are unique in a team."
                )
            if "id" in rule:
                if rule["id"] not in team_rule_ids:
                    errors.setdefault(f"rules[{i}].id", []).append(
                        f"No rule {rule['id']} {scope}; omit 'id' for a new rule."
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
    service = serializers.CharField(
        allow_null=True, help_text="The service that registered the rule (per-service PUT), or null: the team's own."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class RoutingRuleSetOutSerializer(serializers.Serializer):
    version = serializers.IntegerField(help_text='Moves on every PUT; the ETag is `"rules-v<version>"`.')
    updated_at = serializers.DateTimeField(allow_null=True)
    updated_by = serializers.CharField(help_text="Who stored this version (`key:<prefix>`, `user:<name>`).")
    rules = RoutingRuleOutSerializer(many=True, help_text="In evaluation order.")
