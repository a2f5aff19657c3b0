"""The dry run's OpenAPI shapes: its request (the view reads the body itself) and its result."""

from __future__ import annotations

from rest_framework import serializers

from traces.serializers import TraceInSerializer

from .fields import MAX_TEST_TRACES
from .rules import DestinationOutSerializer, RoutingRuleSerializer
from .sampling import SamplingPolicySerializer


class RoutingTestRequestSerializer(serializers.Serializer):
    """The OpenAPI shape of a dry run (the view reads the body itself: a bare trace is allowed too)."""

    trace = TraceInSerializer(required=False, help_text="One trace (or send the trace itself as the body).")
    traces = TraceInSerializer(many=True, required=False, help_text=f"Up to {MAX_TEST_TRACES} traces.")
    rules = RoutingRuleSerializer(
        many=True, required=False, help_text="Try these rules instead of the stored ones (nothing is stored)."
    )
    rule = RoutingRuleSerializer(
        required=False,
        help_text="Try one rule in place of the stored rule its `id` names, or added (no `id`); not with `rules`.",
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
    sample_point = serializers.FloatField(
        help_text="The trace's fixed number in [0, 1), from its run id (its own id when it has no run)."
    )
    policy = SamplingDecisionSerializer()
    evaluations = RuleEvaluationSerializer(many=True)
    errors = ConditionErrorSerializer(  # type: ignore[assignment]  # a field named like Serializer.errors
        many=True, help_text="Conditions that failed at run time (no match)."
    )


class RoutingTestResponseSerializer(serializers.Serializer):
    rules_version = serializers.IntegerField(
        allow_null=True, help_text="null when the request brought its rules (`rules`, or a `rule` to try)."
    )
    sampling_version = serializers.IntegerField(allow_null=True)
    results = RoutingTestResultSerializer(many=True)
