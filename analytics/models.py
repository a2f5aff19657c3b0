"""Rollups: exact counts and sums plus latency histograms per team, time bucket and slice.

A stored trace is pending until `analytics.rollups.fold` (beat, every few seconds) adds it into the
minute, hour and day tables. A trace row names the transaction that stored it and `FoldState` the
snapshot the fold has reached (ingest writes nothing more). Readers add the folded rows and the
pending traces, in one snapshot, so a figure is exact at any instant (docs/analytics.md).

Buckets are UTC epoch seconds of the bucket's start; costs are integers of 1e-10 USD (Trace.cost
has 10 decimal places), so sums are exact.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from accounts.models import Team
from traces.models import _uuid7

from .fields import IntArrayField, UUIDArrayField


class Kind(models.IntegerChoices):
    """Which slice of the traces a row counts. The fold counts traces into DIMS and TAG slices and
    derives the others from the DIMS ones, so unfiltered and one-dimension queries read a few
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
# The usage parts (traces.usage.DETAIL_FIELDS) in the order the rollups store them (analytics 0006
# added the first three, 0007 the rest), which the analytics answers and the report CSV follow.
USAGE_PARTS = (
    "cached_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "input_audio_tokens",
    "input_image_tokens",
    "output_audio_tokens",
    "output_image_tokens",
)
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
    # Parts of prompt and completion tokens (traces/usage.py); last, so that rows of the previous
    # release's layout keep their positions.
    *USAGE_PARTS,
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
    # Database defaults: the previous release's fold (rolling deploys) writes rows without them.
    cached_tokens = models.BigIntegerField(default=0, db_default=0)
    cache_write_tokens = models.BigIntegerField(default=0, db_default=0)
    reasoning_tokens = models.BigIntegerField(default=0, db_default=0)
    input_audio_tokens = models.BigIntegerField(default=0, db_default=0)
    input_image_tokens = models.BigIntegerField(default=0, db_default=0)
    output_audio_tokens = models.BigIntegerField(default=0, db_default=0)
    output_image_tokens = models.BigIntegerField(default=0, db_default=0)
    # analytics.sketch histograms as parallel arrays: bucket keys ascending, and their counts.
    latency_keys = IntArrayField()
    latency_counts = IntArrayField()
    ttft_keys = IntArrayField()
    ttft_counts = IntArrayField()

    class Meta:
        abstract = True


class PendingBatch(models.Model):
    """Traces one ingest transaction of the previous release stored for a team that the rollups do not
    count yet: written with the traces by processes of that release, during a rolling deploy
    (migration 0005's trigger clears their traces' ``rollup_xid``, so they count through the batch
    only), deleted by the fold that adds them into the minute, hour and day rows. Readers count the
    traces of the batches present in their snapshot straight from the traces table
    (`analytics.pending`).

    No foreign keys: the INSERT checks nothing. A trace deleted before its batch is folded (retention)
    is simply not found by the fold nor by readers."""

    team_id = models.BigIntegerField()
    trace_ids = UUIDArrayField()
    first_second = models.BigIntegerField(help_text="UTC epoch second of the earliest trace's timestamp.")
    last_second = models.BigIntegerField(help_text="UTC epoch second of the latest trace's timestamp.")

    class Meta:
        indexes = [models.Index(fields=["team_id", "first_second"], name="pending_batch_team_first")]

    def __str__(self) -> str:
        return f"pending {len(self.trace_ids or [])} traces of team {self.team_id}"


class FoldState(models.Model):
    """Where the fold stands (Postgres; one row): the snapshot up to which traces are added into the
    rollups. Every trace row carries the id of the transaction that stored it (``rollup_xid``, a
    column default: migration 0005), and a trace is pending while that transaction is not visible in
    this snapshot. The fold advances it in the transaction that adds the traces, so in any snapshot
    a trace is either folded or pending, never both (`analytics.rollups`, `analytics.pending`)."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    snapshot = models.TextField(
        help_text="The pg_snapshot up to which traces are folded: a trace is pending while its"
        " transaction (traces_trace.rollup_xid) is not visible in it."
    )
    folded_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"folded up to {self.snapshot}"


class RollupDelta(RollupFields):
    """Legacy: what one ingest transaction added, per minute and slice, as the release before
    `PendingBatch` wrote it. Kept for one release so a rolling deploy never fails ingest: processes
    still on the old code write here after the migration, and `rollups.fold` adds these rows into
    the rollups and deletes them (readers of this release do not count them until then). A later
    release drops the table (docs/deployment.md)."""

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
