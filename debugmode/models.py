from __future__ import annotations

from datetime import datetime

from django.db import models
from django.utils import timezone

from accounts.models import Team


class DebugMode(models.Model):
    """A team's debug mode: on while ``until`` is in the future (it switches itself off)."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="debug_mode")
    until = models.DateTimeField(null=True, blank=True)
    duration_s = models.PositiveIntegerField(default=0)
    changed_at = models.DateTimeField(default=timezone.now)
    changed_by = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return f"{self.team} debug mode until {self.until or 'off'}"

    def is_on(self, now: datetime | None = None) -> bool:
        return self.until is not None and self.until > (now or timezone.now())


class RecordKind(models.TextChoices):
    ROUTING = "routing"  # how the rules evaluated a trace
    EXPORT = "export"  # one exporter call carrying the trace: requests, responses, outcome


class DebugRecord(models.Model):
    """What happened to one trace while its team's debug mode was on; deleted after
    `TRACERELAY_DEBUG_RETENTION_HOURS` (docs/deployment.md, Debug mode)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", db_index=False)
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="+", db_index=False)
    kind = models.CharField(max_length=10, choices=RecordKind.choices)
    destination = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    data = models.JSONField(default=dict)

    class Meta:
        indexes = [
            models.Index(fields=["trace", "created_at"], name="debugrecord_trace_created"),
            models.Index(fields=["created_at"], name="debugrecord_created"),
            models.Index(fields=["team", "created_at"], name="debugrecord_team_created"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} record of trace {self.trace_id}"
