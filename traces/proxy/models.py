"""The proxy's one model: a team's named LLM upstream. Part of the `traces` app (table
`traces_upstream`, migrations in traces/migrations), kept here with the code that uses it."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Team


class UpstreamKind(models.TextChoices):
    OPENAI = "openai", "OpenAI-compatible"
    ANTHROPIC = "anthropic", "Anthropic Messages API"
    AZURE = "azure", "Azure OpenAI"


class Upstream(models.Model):
    """A team's named LLM upstream for the proxy (OpenAI-compatible servers, Azure, Anthropic)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="upstreams")
    name = models.SlugField(max_length=50, help_text="Chosen with X-Service-Upstream or /proxy/u/<name>/.")
    kind = models.CharField(max_length=12, choices=UpstreamKind.choices, default=UpstreamKind.OPENAI)
    base_url = models.URLField(max_length=500)
    provider = models.CharField(max_length=64, blank=True, help_text="Provider name stamped on traces.")
    api_key = models.TextField(blank=True, help_text="Encrypted provider key used when the client sends none.")
    headers = models.JSONField(default=dict, blank=True)
    is_default = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="upstream_unique_team_name")]

    def __str__(self) -> str:
        return f"{self.name} → {self.base_url}"
