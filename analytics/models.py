"""Rollups: exact counts and sums plus latency histograms per team, time bucket and slice.

Ingest appends `RollupDelta` rows in its own transaction (insert only: concurrent writers never
wait on each other); `analytics.rollups.fold` (beat, every few seconds) moves them into the
minute, hour and day tables. Readers add the folded rows and the deltas not folded yet, in one
snapshot, so a figure is exact at any instant (docs/analytics.md).

Buckets are UTC epoch seconds of the bucket's start (integers compare and index the same on
Postgres and SQLite); costs are integers of 1e-10 USD (Trace.cost has 10 decimal places), so sums
are exact on SQLite too, whose decimals are floats.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from accounts.models import Team
from traces.models import _uuid7

from .fields import IntArrayField


class Kind(models.IntegerChoices):
    """Which slice of the traces a row counts. DIMS and TAG rows are written by ingest; the others
    are derived from DIMS rows when folding, so unfiltered and one-dimension queries read a few
    rows per bucket instead of every combination."""

    DIMS = 0, "model × provider × status × environment × service"
    ALL = 1, "every trace of the team"
    TAG = 2, "one row per tag (a trace counts once under each of its tags)"
    MODEL = 3, "by model"
    PROVIDER = 4, "by provider and status"
    STATUS = 5, "by status"
    ENVIRONMENT = 6, "by environment"
    SERVICE = 7, "by service"


# The one-dimension kinds and the DIMS column each one slices by.
ONE_DIMENSION = {
    Kind.MODEL: "model",
    Kind.PROVIDER: "provider",
    Kind.STATUS: "status",
    Kind.ENVIRONMENT: "environment",
    Kind.SERVICE: "service_name",
}
COUNTERS = (
    "count",
    "success",
    "errors",
    "rate_limited",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cost_e10",
    "unpriced",
    "estimated_usage",
    "latency_count",
    "latency_sum",
    "ttft_count",
    "ttft_sum",
)
DIMENSIONS = ("model", "provider", "status", "environment", "service_name")
HISTOGRAMS = ("latency_keys", "latency_counts", "ttft_keys", "ttft_counts")


class RollupFields(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", db_index=False)
    bucket = models.BigIntegerField(help_text="UTC epoch seconds of the bucket's start.")
    kind = models.PositiveSmallIntegerField(choices=Kind.choices)
    # DIMS rows: the five dimensions (key empty). TAG and one-dimension rows: `key` only, except
    # PROVIDER rows, which keep `status` too (rate-limited calls per provider, errors per provider).
    model = models.CharField(max_length=200, blank=True)
    provider = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=12, blank=True)
    environment = models.CharField(max_length=64, blank=True)
    service_name = models.CharField(max_length=200, blank=True)
    key = models.CharField(max_length=200, blank=True)

    count = models.BigIntegerField(default=0)
    success = models.BigIntegerField(default=0)
    errors = models.BigIntegerField(default=0)
    rate_limited = models.BigIntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)
    total_tokens = models.BigIntegerField(default=0)
    cost_e10 = models.BigIntegerField(default=0, help_text="Cost of the priced traces, in 1e-10 USD.")
    unpriced = models.BigIntegerField(default=0)
    estimated_usage = models.BigIntegerField(default=0)
    latency_count = models.BigIntegerField(default=0)
    latency_sum = models.BigIntegerField(default=0)
    ttft_count = models.BigIntegerField(default=0)
    ttft_sum = models.BigIntegerField(default=0)
    # analytics.sketch histograms as parallel arrays: bucket keys ascending, and their counts.
    latency_keys = IntArrayField()
    latency_counts = IntArrayField()
    ttft_keys = IntArrayField()
    ttft_counts = IntArrayField()

    class Meta:
        abstract = True


class RollupDelta(RollupFields):
    """What one ingest transaction added, per minute and slice (DIMS and TAG rows only)."""

    # A UUIDv7 made in Python: COPY needs no round trip to a sequence first.
    id = models.UUIDField(primary_key=True, default=_uuid7, editable=False)

    class Meta:
        indexes = [models.Index(fields=["team", "bucket"], name="rollup_delta_team_bucket")]

    def __str__(self) -> str:
        return f"delta {self.team_id} @{self.bucket} kind {self.kind}"


def _unique_slice(name: str) -> models.UniqueConstraint:
    return models.UniqueConstraint(
        fields=["team", "bucket", "kind", *DIMENSIONS, "key"], name=f"rollup_{name}_unique_slice"
    )


def _kind_in_time(name: str) -> models.Index:
    """What every read asks: one kind of row over a time range. (The unique index leads with the
    bucket, which the fold's look-ups need: a read of one kind over 7 days walked every kind's
    entries of those 168 hours, ~400 per hour at 10M traces a month.)"""
    return models.Index(fields=["team", "kind", "bucket"], name=f"rollup_{name}_kind_bucket")


class MinuteRollup(RollupFields):
    class Meta:
        constraints = [_unique_slice("minute")]
        indexes = [_kind_in_time("minute")]

    def __str__(self) -> str:
        return f"minute {self.team_id} @{self.bucket} kind {self.kind}"


class HourRollup(RollupFields):
    class Meta:
        constraints = [_unique_slice("hour")]
        indexes = [_kind_in_time("hour")]

    def __str__(self) -> str:
        return f"hour {self.team_id} @{self.bucket} kind {self.kind}"


class DayRollup(RollupFields):
    class Meta:
        constraints = [_unique_slice("day")]
        indexes = [_kind_in_time("day")]

    def __str__(self) -> str:
        return f"day {self.team_id} @{self.bucket} kind {self.kind}"


GRAINS: dict[str, tuple[int, type[RollupFields]]] = {
    "minute": (60, MinuteRollup),
    "hour": (3600, HourRollup),
    "day": (86400, DayRollup),
}


class Retention(models.Model):
    """How long a team's data is kept. Blank fields take the deployment's defaults
    (TRACERELAY_RETENTION_TRACE_DAYS, TRACERELAY_RETENTION_ROLLUP_DAYS)."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="retention")
    trace_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Raw traces (and their deliveries) older than this are deleted."
    )
    rollup_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Hour and day rollups older than this are deleted."
    )

    def __str__(self) -> str:
        return f"{self.team} retention"

    @property
    def effective_trace_days(self) -> int:
        return self.trace_days or settings.TRACERELAY_RETENTION_TRACE_DAYS

    @property
    def effective_rollup_days(self) -> int:
        return self.rollup_days or settings.TRACERELAY_RETENTION_ROLLUP_DAYS
