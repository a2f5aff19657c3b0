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
            # /settings/prices' "unpriced models in the last 30 days" reads the index alone: partial, so
            # priced calls (nearly all) cost no index entry.
            models.Index(
                fields=["team", "-timestamp"],
                name="trace_unpriced",
                condition=models.Q(unpriced=True),
                include=["provider", "model"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.trace_id} {self.model} {self.status}"


class Run(models.Model):
    """A run's summary (docs/runs.md): one row per (team, run_id), kept by the ingest transaction that
    stores the run's spans (`traces.runs.summary`, an upsert that adds each batch's figures under the
    row's lock), so `GET /api/v1/runs` reads one row per run at any table size. Spans may arrive in any
    order: every column is a sum, a min/max, or chosen by an order-free rule (the earliest root names
    the run). The spans themselves stay in Trace; `GET /api/v1/runs/{run_id}` reads them there."""

    id = models.BigAutoField(primary_key=True)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="runs", db_index=False)
    run_id = models.CharField(max_length=128)
    # The root (parent_id ""), once it has arrived: the earliest one when a run has several.
    name = models.CharField(max_length=200, blank=True)
    root_id = models.CharField(max_length=128, blank=True)
    root_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField()  # the earliest span's timestamp
    ended_at = models.DateTimeField()  # the latest timestamp + latency of any span
    spans = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)  # spans whose status is not success
    # Calls (`llm`, `embedding`) only: a structural span's usage is its calls' again (double-count rule).
    llm_calls = models.PositiveIntegerField(default=0)
    unpriced_calls = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=22, decimal_places=10, default=0)  # of the priced calls
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)
    # The first non-empty value a span of the run brought (the root's, when it has one).
    user_id = models.CharField(max_length=200, blank=True)
    session_id = models.CharField(max_length=200, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "run_id"], name="run_unique_team_run_id")]
        indexes = [
            # The list, newest first, keyset on (started_at, id); since/until bound the same scan.
            models.Index(fields=["team", "-started_at", "-id"], name="run_list"),
            # status=error, name, user and session filters: partial, so the common case costs nothing.
            models.Index(fields=["team", "-started_at", "-id"], name="run_failed", condition=models.Q(errors__gt=0)),
            models.Index(fields=["team", "name", "-started_at", "-id"], name="run_name", condition=~models.Q(name="")),
            models.Index(
                fields=["team", "user_id", "-started_at", "-id"], name="run_user", condition=~models.Q(user_id="")
            ),
            models.Index(
                fields=["team", "session_id", "-started_at", "-id"],
                name="run_session",
                condition=~models.Q(session_id=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id} ({self.spans} spans)"


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


class ScoreType(models.TextChoices):
    NUMERIC = "numeric"
    BOOLEAN = "boolean"
    CATEGORICAL = "categorical"


class Score(models.Model):
    """A score or a piece of feedback on a trace (docs/scores.md): ``value`` is the JSON number,
    boolean or string posted, ``data_type`` says which. Routed like its trace (delivery.scores)."""

    id = models.UUIDField(primary_key=True, default=_uuid7, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", db_index=False)
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="scores", db_index=False)
    name = models.CharField(max_length=200)
    value = models.JSONField()
    # The number of a numeric or boolean score (1/0), for the feed's filters and the analytics' averages.
    number = models.FloatField(null=True, blank=True)
    data_type = models.CharField(max_length=12, choices=ScoreType.choices)
    comment = models.TextField(blank=True)
    source = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # The trace's timestamp, copied when the score is stored (a trace's time never changes): the
    # analytics' score average reads a range of it down `score_team_time` without touching the traces.
    trace_timestamp = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["trace", "created_at"], name="score_trace"),
            models.Index(fields=["team", "name", "created_at"], name="score_team_name"),
            models.Index(fields=["team", "name", "trace_timestamp"], name="score_team_time"),
        ]

    def __str__(self) -> str:
        return f"{self.name}={self.value!r} on {self.trace_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.trace_timestamp is None and self.trace_id is not None:
            self.trace_timestamp = Trace.objects.filter(pk=self.trace_id).values_list("timestamp", flat=True).first()
        super().save(*args, **kwargs)


class ShareLink(models.Model):
    """A public, read-only link to one trace (docs/sharing.md). Only the token's SHA-256 is stored."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", db_index=False)
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="share_links", db_index=False)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["trace", "-created_at"], name="share_link_trace")]

    def __str__(self) -> str:
        return f"share link {self.pk} of {self.trace_id}"


# `tags__has_item="beta"`, `metadata__has_entry=("k", "v")` (see traces/lookups.py).
Trace._meta.get_field("tags").register_lookup(HasItem)
Trace._meta.get_field("destinations").register_lookup(HasItem)
Trace._meta.get_field("metadata").register_lookup(HasEntry)


# The proxy's Upstream model lives with the proxy (traces/proxy/models.py), in this app (table
# traces_upstream, migrations here); importing it registers it, as traces/admin.py does its admin.
# A team's own prices live with the code that uses them (traces/prices/), in this app (table
# traces_teamprice, migrations here).
from .prices.models import TeamPrice  # noqa: E402, F401
from .proxy.models import Upstream, UpstreamKind  # noqa: E402, F401
