"""A re-pricing job (docs/pricing.md, "Re-pricing"): the stored calls of one team in a time range,
priced again under today's prices, with the rollups, runs and alerts corrected to match.

The worker walks the range in keyset chunks of (timestamp, id); ``cursor_at``/``cursor_id`` is the
last trace done, committed with each chunk, so a job taken over after a worker died goes on from
there. A worker holds the job by ``claim_token`` (a conditional UPDATE: two workers never run one
job) and renews ``heartbeat_at`` with every chunk; a claim silent for longer than
TRACERELAY_REPRICE_STALE_S is taken over by the sweeper.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Team


class JobStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class RepriceJob(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", db_index=False)
    actor = models.CharField(max_length=200, help_text="Who asked (key:… or user:…), for the audit log.")
    since = models.DateTimeField()
    until = models.DateTimeField()
    model = models.CharField(max_length=200, blank=True, help_text="Exact, or a prefix ending in *; blank: all.")
    redeliver = models.BooleanField(default=False)

    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.PENDING)
    traces_total = models.PositiveIntegerField(null=True, blank=True, help_text="Counted when the job starts.")
    traces_done = models.PositiveIntegerField(default=0)
    traces_changed = models.PositiveIntegerField(default=0)
    deliveries_requeued = models.PositiveIntegerField(default=0)
    cost_before = models.DecimalField(max_digits=24, decimal_places=10, default=0)
    cost_after = models.DecimalField(max_digits=24, decimal_places=10, default=0)
    # Per model: {"gpt-4o": {"traces": n, "changed": n, "cost_before": "…", "cost_after": "…"}}.
    by_model = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    # Where the walk is (the last trace done) and who holds the job.
    cursor_at = models.DateTimeField(null=True, blank=True)
    cursor_id = models.UUIDField(null=True, blank=True)
    claim_token = models.UUIDField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0, help_text="Claims taken (1, and one per take-over).")

    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["team", "-created_at"], name="reprice_job_team"),
            models.Index(
                fields=["heartbeat_at"],
                name="reprice_job_open",
                condition=models.Q(status__in=["pending", "running"]),
            ),
        ]

    def __str__(self) -> str:
        return f"reprice {self.pk} of team {self.team_id} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status in (JobStatus.PENDING, JobStatus.RUNNING)
