"""Custom dashboards (issue 24, item 8): a team's saved boards of widgets.

A `Dashboard` keeps its widgets in order as one JSON list (`dashboards.definition` checks each
one: a question to the analytics API and how to draw its answer). Every member of the team sees
every board. ``version`` goes up by one at each change, so an edit made from a page that shows an
older board is refused instead of overwriting what someone else saved meanwhile.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.models import Team


class Dashboard(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="dashboards")
    name = models.CharField(max_length=200)
    widgets = models.JSONField(default=list, blank=True, help_text="The widgets, in the order shown.")
    version = models.PositiveIntegerField(default=1)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["team", "name"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.team})"
