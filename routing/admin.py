"""The operator's admin for routing: rules (validated like the API; saving moves the rule set's
version on so every process recompiles), rule-set headers, sampling policies, and the outbox
(read-only, with a replay action for dead or failed rows)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from accounts.services import audit

from .conditions import ConditionError, compile_condition
from .destinations import DestinationChecker
from .models import RoutingRule, RuleSet, SamplingPolicy
from .services import routing_rules_touched, sampling_policy_touched


def _actor(request: HttpRequest) -> str:
    user = getattr(request, "user", None)
    return f"user:{user.get_username()}" if user is not None and user.is_authenticated else "admin"


def _condition_error(exc: ConditionError) -> str:
    return f"{exc.path}: {exc.message}" if exc.path else exc.message


class RoutingRuleForm(forms.ModelForm):
    class Meta:
        model = RoutingRule
        fields = [
            "team",
            "name",
            "description",
            "priority",
            "enabled",
            "condition",
            "conditions",
            "destinations",
            "sample_rate",
            "tags",
            "stop",
        ]
        help_texts = {
            "condition": 'A CEL expression, e.g. model == "gpt-4" && cost > 0.05. Leave empty to use "conditions".',
            "conditions": 'An object condition, e.g. {"error": true}. Neither condition: every trace.',
            "destinations": 'A list: ["langfuse", {"name": "helicone", "sample_rate": 0.1}].',
        }

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        condition = (data.get("condition") or "").strip()
        conditions = data.get("conditions") or None
        if condition and conditions:
            raise forms.ValidationError("Give a condition or conditions, not both.")
        try:
            compile_condition(conditions if conditions else condition)
        except ConditionError as exc:
            self.add_error("conditions" if conditions else "condition", _condition_error(exc))
        rate = data.get("sample_rate")
        if rate is not None and not 0.0 <= rate <= 1.0:
            self.add_error("sample_rate", "Must be from 0 to 1.")
        tags = data.get("tags")
        if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags)):
            self.add_error("tags", "A list of strings.")
        team = data.get("team")
        raw = data.get("destinations")
        if team is not None and raw is not None:
            if not isinstance(raw, list):
                self.add_error("destinations", "A list of destinations.")
            else:
                checker = DestinationChecker(team.pk)
                errors: dict[str, list[str]] = {}
                cleaned = [checker.clean(item, f"[{i}]", errors) for i, item in enumerate(raw)]
                if errors:
                    self.add_error("destinations", [f"{path}: {m}" for path, ms in errors.items() for m in ms])
                else:
                    data["destinations"] = cleaned
        return data


@admin.register(RoutingRule)
class RoutingRuleAdmin(admin.ModelAdmin):
    form = RoutingRuleForm
    list_display = ["name", "team", "priority", "enabled", "condition_summary", "destination_names", "stop"]
    list_filter = ["enabled", "stop", "team"]
    search_fields = ["name", "description", "condition", "team__name"]
    ordering = ["team", "priority", "id"]
    list_select_related = ["team"]
    readonly_fields = ["created_at", "updated_at"]

    @admin.display(description="condition")
    def condition_summary(self, rule: RoutingRule) -> str:
        text = rule.condition or (json.dumps(rule.conditions) if rule.conditions else "every trace")
        return text if len(text) <= 80 else text[:79] + "…"

    @admin.display(description="destinations")
    def destination_names(self, rule: RoutingRule) -> str:
        return ", ".join(str(d.get("name")) for d in rule.destinations or [] if isinstance(d, dict))

    def save_model(self, request: HttpRequest, obj: RoutingRule, form: Any, change: bool) -> None:
        obj.updated_at = timezone.now()
        super().save_model(request, obj, form, change)
        header = routing_rules_touched(team_id=obj.team_id, actor=_actor(request))
        audit(
            team=obj.team_id,
            actor=_actor(request),
            action="routing.rule.change" if change else "routing.rule.create",
            target=obj.name,
            data={"version": header.version, "via": "admin"},
        )

    def delete_model(self, request: HttpRequest, obj: RoutingRule) -> None:
        team_id, name = obj.team_id, obj.name
        super().delete_model(request, obj)
        header = routing_rules_touched(team_id=team_id, actor=_actor(request))
        audit(
            team=team_id,
            actor=_actor(request),
            action="routing.rule.delete",
            target=name,
            data={"version": header.version, "via": "admin"},
        )

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[RoutingRule]) -> None:
        teams = set(queryset.values_list("team_id", flat=True))
        names = list(queryset.values_list("team_id", "name"))
        super().delete_queryset(request, queryset)
        for team_id in teams:
            header = routing_rules_touched(team_id=team_id, actor=_actor(request))
            audit(
                team=team_id,
                actor=_actor(request),
                action="routing.rule.delete",
                target=", ".join(n for t, n in names if t == team_id)[:200],
                data={"version": header.version, "via": "admin"},
            )


@admin.register(RuleSet)
class RuleSetAdmin(admin.ModelAdmin):
    list_display = ["team", "version", "updated_at", "updated_by"]
    search_fields = ["team__name"]
    readonly_fields = ["team", "version", "updated_at", "updated_by"]
    list_select_related = ["team"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made by the first PUT of a team's rules


class SamplingPolicyForm(forms.ModelForm):
    class Meta:
        model = SamplingPolicy
        fields = ["team", "default_sample_rate", "rules"]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        rate = data.get("default_sample_rate")
        if rate is not None and not 0.0 <= rate <= 1.0:
            self.add_error("default_sample_rate", "Must be from 0 to 1.")
        rules = data.get("rules")
        if rules is None:
            return data
        if not isinstance(rules, list):
            self.add_error("rules", 'A list of {"condition": ..., "sample_rate": ...}.')
            return data
        problems: list[str] = []
        for i, rule in enumerate(rules):
            if not isinstance(rule, dict) or set(rule) != {"condition", "sample_rate"}:
                problems.append(f"[{i}]: needs exactly 'condition' and 'sample_rate'.")
                continue
            value = rule["sample_rate"]
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                problems.append(f"[{i}].sample_rate: must be a number from 0 to 1.")
            if rule["condition"] in (None, "", {}):
                problems.append(f"[{i}].condition: needs a condition.")
                continue
            try:
                compile_condition(rule["condition"])
            except ConditionError as exc:
                problems.append(f"[{i}].condition: {_condition_error(exc)}")
        if problems:
            self.add_error("rules", problems)
        return data


@admin.register(SamplingPolicy)
class SamplingPolicyAdmin(admin.ModelAdmin):
    form = SamplingPolicyForm
    list_display = ["team", "default_sample_rate", "rule_count", "version", "updated_at"]
    search_fields = ["team__name"]
    readonly_fields = ["version", "updated_at"]
    list_select_related = ["team"]

    @admin.display(description="rules")
    def rule_count(self, policy: SamplingPolicy) -> int:
        return len(policy.rules or [])

    def save_model(self, request: HttpRequest, obj: SamplingPolicy, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        sampling_policy_touched(team_id=obj.team_id)
        obj.refresh_from_db(fields=["version"])
        audit(
            team=obj.team_id,
            actor=_actor(request),
            action="routing.sampling.replace",
            target=f"v{obj.version}",
            data={"default_sample_rate": obj.default_sample_rate, "rules": obj.rules, "via": "admin"},
        )
