from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts import keys
from accounts.models import ApiKey, Membership, Role, Team
from integrations.models import Integration
from routing.models import RoutingRule
from traces.ids import new_trace_id
from traces.models import Plant, Score, ScoreType, Trace
from traces.runs.summary import rebuild


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", "password")


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team

    name = factory.Sequence(lambda n: f"team-{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    team = factory.SubFactory(TeamFactory)
    role = Role.MEMBER


class ApiKeyFactory(factory.django.DjangoModelFactory):
    """Build a key; the raw key is on ``key._raw`` (only in tests: the model never stores it)."""

    class Meta:
        model = ApiKey

    team = factory.SubFactory(TeamFactory)
    environment = "production"

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        raw = keys.generate(kwargs.get("environment", "production"))
        kwargs["prefix"] = keys.display_prefix(raw)
        kwargs["key_hash"] = keys.digest(raw)
        obj = super()._create(model_class, *args, **kwargs)
        obj._raw = raw
        return obj


class TraceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Trace

    team = factory.SubFactory(TeamFactory)
    trace_id = factory.LazyFunction(new_trace_id)
    model = "gpt-4o"
    provider = "openai"
    prompt_tokens = 100
    completion_tokens = 50
    total_tokens = 150
    latency_ms = 420
    timestamp = factory.LazyFunction(timezone.now)
    # A record sent without run_id is the run of its own id (docs/runs.md), as ingest stores it.
    run_id = factory.LazyAttribute(lambda t: t.trace_id)

    @classmethod
    def _create(cls, model_class: Any, *args: Any, **kwargs: Any) -> Trace:
        """Saved as ingest would: with its run's summary row (traces.runs.summary)."""
        trace = super()._create(model_class, *args, **kwargs)
        rebuild(trace.team_id, [trace.run_id])
        return trace


class PlantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Plant

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"plant-{n}")
    tag = "green"


class IntegrationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Integration

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"integration-{n}")
    platform = "webhook"
    config = factory.LazyFunction(lambda: {"url": "http://127.0.0.1:9/hook", "headers": {}})


class RoutingRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RoutingRule

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"rule-{n}")
    priority = 100
    destinations = factory.LazyFunction(lambda: [{"name": "webhook", "sample_rate": 1.0, "tags": [], "fallback": []}])


def score_of(trace: Trace, name: str, value: Any) -> Score:
    """A score stored on ``trace`` as the API stores one: a bool is boolean (its number 1 or 0), a
    string categorical (no number), anything else numeric."""
    if isinstance(value, bool):
        number, data_type = float(value), ScoreType.BOOLEAN
    elif isinstance(value, str):
        number, data_type = None, ScoreType.CATEGORICAL
    else:
        number, data_type = float(value), ScoreType.NUMERIC
    return Score.objects.create(
        team_id=trace.team_id, trace=trace, name=name, value=value, number=number, data_type=data_type
    )
