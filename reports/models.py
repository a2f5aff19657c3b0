"""Report definitions and their runs (issue 10, Reports).

A `Report` is a saved analytics question (the trace feed's filters, a group-by, an interval and a
period) with the formats to render and who gets them; `schedule` (a crontab, UTC) makes beat run
it. Each run is a `ReportRun`: its period fixed when it was asked for, its files kept in the
database (reports are small: a CSV of a few thousand rows, a PDF of a few pages) so every web
process can serve them, whichever worker made them.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.models import Team


class Format(models.TextChoices):
    CSV = "csv", "CSV"
    PDF = "pdf", "PDF"


class Report(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="reports")
    name = models.CharField(max_length=200)
    filters = models.JSONField(default=dict, blank=True, help_text="Trace feed filter parameters.")
    group_by = models.CharField(max_length=20, blank=True)
    interval = models.CharField(max_length=10, blank=True, help_text="minute, hour, day; blank: by the period.")
    time_range = models.CharField(max_length=10, blank=True, help_text="e.g. 7d: the period ending at each run.")
    since = models.DateTimeField(null=True, blank=True)
    until = models.DateTimeField(null=True, blank=True)
    formats = models.JSONField(default=list)
    recipients = models.JSONField(default=list, blank=True)
    schedule = models.CharField(max_length=100, blank=True, help_text="Crontab (UTC): minute hour day month weekday.")
    skip_empty_groups = models.BooleanField(
        default=False, help_text="Leave out the groups with no traffic in the period (tables, CSV, PDF)."
    )
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["team", "name"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.team})"


class RunStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class ReportRun(models.Model):
    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.PENDING)
    trigger = models.CharField(max_length=10, default="manual", help_text="manual or schedule")
    since = models.DateTimeField()
    until = models.DateTimeField()
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    csv = models.BinaryField(null=True, blank=True)
    pdf = models.BinaryField(null=True, blank=True)
    emailed_to = models.JSONField(default=list, blank=True)
    not_emailed = models.TextField(blank=True, help_text="Why the recipients got no mail (no mail server configured).")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["report", "-created_at"])]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.report_id} ({self.status})"
