"""Spend alerts (issue 10): a threshold on cost or tokens over a window, and what happened.

An alert is ``ok`` or ``firing``. The evaluator (alerts.evaluation, every
TRACERELAY_ALERT_EVALUATE_INTERVAL_S) fires it once when the window's value reaches the
threshold and resolves it when the value is back under; each is an `AlertEvent` with the value,
the threshold and the window, and each notifies by email and signed webhook.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Team


class Metric(models.TextChoices):
    COST = "cost", "Cost (USD)"
    TOKENS = "tokens", "Tokens"
    UNPRICED = "unpriced", "Unpriced or usage-less traces"  # the built-in alert's
    # An integration's deliveries (scope {"integration": "<name>"}):
    DELIVERY_FAILURE_RATE = "delivery_failure_rate", "Delivery failure rate"
    DEAD_LETTERS = "dead_letters", "Dead letters"
    OLDEST_PENDING_S = "oldest_pending_s", "Oldest pending delivery (seconds)"


DELIVERY_METRICS = frozenset({Metric.DELIVERY_FAILURE_RATE, Metric.DEAD_LETTERS, Metric.OLDEST_PENDING_S})


class WindowType(models.TextChoices):
    ROLLING = "rolling"
    CALENDAR = "calendar"


class Period(models.TextChoices):
    DAY = "day"
    WEEK = "week"
    MONTH = "month"


class State(models.TextChoices):
    OK = "ok"
    FIRING = "firing"


BUILTIN_UNPRICED = "unpriced"


class Alert(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="alerts")
    name = models.CharField(max_length=200)
    metric = models.CharField(max_length=30, choices=Metric.choices)
    threshold = models.DecimalField(max_digits=24, decimal_places=10)
    window_type = models.CharField(max_length=10, choices=WindowType.choices)
    window_minutes = models.PositiveIntegerField(null=True, blank=True)
    period = models.CharField(max_length=5, choices=Period.choices, blank=True)
    scope = models.JSONField(
        default=dict, blank=True, help_text="user_id, model, tag, environment, service_name; integration"
    )
    emails = models.JSONField(default=list, blank=True)
    webhooks = models.JSONField(default=list, blank=True, help_text='[{"url": ...}]')
    signing_secret = models.TextField(blank=True, help_text="Fernet token: the webhook signing secret.")
    enabled = models.BooleanField(default=True)
    builtin = models.CharField(max_length=20, blank=True, help_text="Set on alerts the service makes itself.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.OK)
    fired_window_start = models.DateTimeField(null=True, blank=True)
    last_value = models.DecimalField(max_digits=24, decimal_places=10, null=True, blank=True)
    last_evaluated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="alert_unique_team_name")]
        indexes = [models.Index(fields=["enabled"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.team})"


class EventKind(models.TextChoices):
    FIRED = "fired"
    RESOLVED = "resolved"


class AlertEvent(models.Model):
    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=10, choices=EventKind.choices)
    at = models.DateTimeField(default=timezone.now)
    value = models.DecimalField(max_digits=24, decimal_places=10)
    threshold = models.DecimalField(max_digits=24, decimal_places=10)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    notifications = models.JSONField(default=dict, blank=True, help_text="What each email and webhook answered.")

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["alert", "-at"])]

    def __str__(self) -> str:
        return f"{self.alert_id} {self.kind} at {self.at:%Y-%m-%d %H:%M}"
