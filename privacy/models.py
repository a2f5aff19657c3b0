from __future__ import annotations

import secrets

from django.db import models
from django.utils import timezone

from accounts.models import Team


class Mode(models.TextChoices):
    OFF = "off"
    DETECT = "detect"  # count and flag the kinds found; the text is kept
    REDACT = "redact"  # typed placeholders: [EMAIL]
    HASH = "hash"  # stable pseudonyms per team: [EMAIL:1a2b3c4d5e6f]
    DROP = "drop"  # the field holding PII is removed or emptied


def new_hash_salt() -> str:
    return secrets.token_hex(16)


class PiiPolicy(models.Model):
    """A team's PII policy: one mode before storage, optional modes per destination before export."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="pii_policy")
    stored_mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.OFF)
    # {"<integration name>": "<mode>"}; a destination without an entry gets the stored trace.
    destinations = models.JSONField(default=dict, blank=True)
    # Built-in kinds the policy acts on; null means all of them.
    kinds = models.JSONField(null=True, blank=True)
    custom_patterns = models.JSONField(default=list, blank=True, help_text='[{"name": "...", "regex": "..."}]')
    # Mixed with SECRET_KEY into the team's pseudonym key: a new salt gives every value a new pseudonym.
    hash_salt = models.CharField(max_length=64, default=new_hash_salt, editable=False)
    version = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = "PII policy"
        verbose_name_plural = "PII policies"

    def __str__(self) -> str:
        return f"{self.team} PII policy v{self.version} (stored: {self.stored_mode})"
