from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Team


class RuleSet(models.Model):
    """The team's rule set as a whole: its version moves on every PUT (for If-Match / ETag)."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="rule_set")
    version = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return f"{self.team} rules v{self.version}"


class RoutingRule(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="routing_rules")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    priority = models.IntegerField(default=100, help_text="Lower runs first.")
    enabled = models.BooleanField(default=True)
    # Exactly one of the two condition forms; neither means "every trace".
    conditions = models.JSONField(null=True, blank=True)
    condition = models.TextField(blank=True)
    # Normalised destinations: [{"name", "platform"?, "sample_rate", "tags", "url"?, "fallback": [...]}]
    destinations = models.JSONField(default=list)
    sample_rate = models.FloatField(default=1.0)
    tags = models.JSONField(default=list, blank=True)
    stop = models.BooleanField(default=False)
    # The service that registered this rule (`PUT /routing/rules/services/{name}`, the SDK's
    # routing_rules); empty for the team's own rules. Each service replaces only its own rules.
    service = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["priority", "id"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="rule_unique_team_name")]

    def __str__(self) -> str:
        return f"{self.priority}: {self.name}"


class SamplingPolicy(models.Model):
    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="sampling_policy")
    default_sample_rate = models.FloatField(default=1.0)
    rules = models.JSONField(default=list, help_text='[{"condition": "...", "sample_rate": 0.5}]')
    version = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "sampling policies"

    def __str__(self) -> str:
        return f"{self.team} sampling (default {self.default_sample_rate})"
