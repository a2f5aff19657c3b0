"""A team's own price for a model. Part of the `traces` app (table `traces_teamprice`, migrations in
traces/migrations), kept here with the code that uses it; `traces.models` imports it."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Team

PRICE_DIGITS = 20
PRICE_PLACES = 10  # USD per million tokens: 0.0000000001 is a ten-thousandth of a nano-dollar per token


def _price(**kwargs: object) -> models.DecimalField:
    return models.DecimalField(max_digits=PRICE_DIGITS, decimal_places=PRICE_PLACES, **kwargs)  # type: ignore[arg-type]


class TeamPrice(models.Model):
    """USD per million tokens for calls to ``model`` (exact, or every name starting with the text
    before a trailing ``*``), from ``provider`` when set, at or after ``effective_from`` (None: always).
    ``revision`` counts the changes (1 when created): a trace's ``price_version`` names it."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="prices")
    model = models.CharField(max_length=200)
    provider = models.CharField(max_length=64, blank=True)
    input_per_mtok = _price()
    output_per_mtok = _price()
    cached_input_per_mtok = _price(null=True, blank=True)
    cache_write_per_mtok = _price(null=True, blank=True)
    reasoning_per_mtok = _price(null=True, blank=True)
    effective_from = models.DateTimeField(null=True, blank=True)
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["model", "provider", "effective_from", "id"]
        constraints = [
            # One price per (model, provider, start): an unset provider or start is one value here.
            models.UniqueConstraint(
                fields=["team", "model", "provider", "effective_from"],
                name="teamprice_unique_team_model_provider_from",
                nulls_distinct=False,
            )
        ]

    def __str__(self) -> str:
        return f"{self.model} ({self.provider or 'any provider'}) from {self.effective_from or 'always'}"
