from __future__ import annotations

import uuid
from typing import Any

import uuid_utils
from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.models import ApiKey, Team

from .kinds import CALL_KINDS, Kind  # what a span of a run is (docs/runs.md); Kind and CALL_KINDS live here too
from .lookups import HasEntry, HasItem


def _uuid7() -> object:
    return uuid.UUID(bytes=uuid_utils.uuid7().bytes)


class Status(models.TextChoices):
    SUCCESS = "success"
    ERROR = "error"
    RATE_LIMITED = "rate_limited"


class Source(models.TextChoices):
    API = "api"
    BATCH = "batch"
    PROXY = "proxy"
    OTLP = "otlp"
    SDK = "sdk"


def calls_only(qs: models.QuerySet[Any]) -> models.QuerySet[Any]:
    """``qs``'s calls (`llm` and `embedding` spans): what analytics, reports, alerts and the session and
    user counts count; the feed lists every kind."""
    return qs.filter(kind__in=CALL_KINDS)


class Trace(models.Model):
    """One span of a run: an LLM call (``kind`` `llm`, what a trace always was), an embedding, or a
    structural span (agent, tool, ...; docs/runs.md). ``trace_id`` is the public id (ours ``trc_…`` or
    the client's), unique per team."""

    id = models.UUIDField(primary_key=True, default=_uuid7, editable=False)
    # No single-column indexes on these FKs: every index below leads with team_id, and traces are
    # never looked up by key (keys are revoked, not deleted). Each index is paid on every insert.
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="traces", db_index=False)
    trace_id = models.CharField(max_length=128)
    api_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.API)

    # The run this span belongs to (docs/runs.md): ``run_id`` is the client's (the OpenTelemetry trace
    # id for OTLP) or, for a record sent without one, its own ``trace_id``: a run of one span.
    # ``parent_id`` is the ``trace_id`` of another span of the same run, or "" for a root; the parent
    # may arrive after its children. Database defaults too, so a process of the previous release
    # (rolling deploys) still writes rows.
    run_id = models.CharField(max_length=128, default="", db_default="", blank=True)
    parent_id = models.CharField(max_length=128, default="", db_default="", blank=True)
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.LLM, db_default=Kind.LLM)
    name = models.CharField(max_length=200, default="", db_default="", blank=True)

    model = models.CharField(max_length=200, blank=True)
    provider = models.CharField(max_length=64, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    total_tokens = models.PositiveIntegerField(default=0)
    # Parts of the prompt and of the completion (traces/usage.py): priced at their own rates.
    cached_tokens = models.PositiveIntegerField(default=0, db_default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0, db_default=0)
    input_audio_tokens = models.PositiveIntegerField(default=0, db_default=0)
    input_image_tokens = models.PositiveIntegerField(default=0, db_default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0, db_default=0)
    output_audio_tokens = models.PositiveIntegerField(default=0, db_default=0)
    output_image_tokens = models.PositiveIntegerField(default=0, db_default=0)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    time_to_first_token_ms = models.PositiveIntegerField(null=True, blank=True)
    timestamp = models.DateTimeField(default=timezone.now)
    received_at = models.DateTimeField(default=timezone.now)

    status = models.CharField(max_length=12, choices=Status.choices, default=Status.SUCCESS)
    error_type = models.CharField(max_length=200, blank=True)
    error_message = models.TextField(blank=True)

    input = models.JSONField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    tags = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # The team's PII policy before storage (privacy/records.py): {"mode": ..., "kinds": {"EMAIL": 2}},
    # counts per kind and never the values; null when the policy was off.
    pii = models.JSONField(null=True, blank=True)
    environment = models.CharField(max_length=64, blank=True)
    service_name = models.CharField(max_length=200, blank=True)
    session_id = models.CharField(max_length=200, blank=True)
    user_id = models.CharField(max_length=200, blank=True)

    # Pricing: ours from genai-prices (never a silent zero), and what the client reported.
    cost = models.DecimalField(max_digits=18, decimal_places=10, null=True, blank=True)
    client_cost = models.DecimalField(max_digits=18, decimal_places=10, null=True, blank=True)
    unpriced = models.BooleanField(default=False)
    usage_estimated = models.BooleanField(default=False)
    price_source = models.CharField(max_length=64, blank=True)
    price_version = models.CharField(max_length=64, blank=True)

    # Routing outcome, denormalised for the feed: destination names the trace goes to, and the
    # decisions with reasons (kept and sampled-out) as the router returned them.
    destinations = models.JSONField(default=list, blank=True)
    routing = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "trace_id"], name="trace_unique_team_trace_id")]
        indexes = [
            models.Index(fields=["team", "-timestamp", "-id"], name="trace_feed"),
            models.Index(fields=["team", "model", "-timestamp"], name="trace_model"),
            models.Index(fields=["team", "provider", "-timestamp"], name="trace_provider"),
            # Status filters ask for the failures (6% of rows): partial, so the successes cost no index
            # entries; a feed of successes walks `trace_feed`. With "-id" the feed's keyset order
            # (timestamp, id) comes straight out of either: a filtered page stops after its 51 rows.
            models.Index(
                fields=["team", "status", "-timestamp", "-id"],
                name="trace_failed",
                condition=~models.Q(status=Status.SUCCESS),
            ),
            models.Index(
                fields=["team", "model", "status", "-timestamp", "-id"],
                name="trace_model_failed",
                condition=~models.Q(status=Status.SUCCESS),
            ),
            models.Index(fields=["team", "environment", "-timestamp"], name="trace_environment"),
            # A run's spans in one look (GET /api/v1/runs/{run_id}, the run page, routing's run lock).
            models.Index(fields=["team", "run_id", "timestamp"], name="trace_run"),
            # /sessions, /users and the feed filtered to one: partial, so traces without one cost nothing.
            models.Index(
                fields=["team", "session_id", "-timestamp"], name="trace_session", condition=~models.Q(session_id="")
            ),
            # /users' totals read the index alone (`selectors.trace_groups`): a few heavy users own most
            # of a range's rows, and fetching those from the table was seconds at 1M traces.
            models.Index(
                fields=["team", "user_id", "-timestamp"],
                name="trace_user_totals",
                condition=~models.Q(user_id=""),
                include=["total_tokens", "cost", "unpriced", "status", "kind"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.trace_id} {self.model} {self.status}"


class Plant(models.Model):
    """The interface spec's sample record (GET /plants), owned by a team."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="plants")
    name = models.CharField(max_length=100)
    tag = models.CharField(max_length=100)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name


class FeedColumn(models.TextChoices):
    """The feed's columns a person may add to the default ones (docs/dashboard.md, the trace feed)."""

    USER = "user", "User"
    SESSION = "session", "Session"
    SERVICE = "service", "Service"
    RUN = "run", "Run"
    PROMPT = "prompt", "Prompt preview"


class FeedColumns(models.Model):
    """The optional feed columns one person chose: kept per user, server side, so the choice follows
    them to every team, browser and device (and the live poll and the next pages render the same)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    columns = models.JSONField(default=list, blank=True)  # FeedColumn values, in FeedColumn order
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.user_id}: {', '.join(self.columns) or 'default columns'}"


# `tags__has_item="beta"`, `metadata__has_entry=("k", "v")` (see traces/lookups.py).
Trace._meta.get_field("tags").register_lookup(HasItem)
Trace._meta.get_field("destinations").register_lookup(HasItem)
Trace._meta.get_field("metadata").register_lookup(HasEntry)


# The proxy's Upstream model lives with the proxy (traces/proxy/models.py), in this app (table
# traces_upstream, migrations here); importing it registers it, as traces/admin.py does its admin.
from .proxy.models import Upstream, UpstreamKind  # noqa: E402, F401
