"""Writes for PII policies: replaced whole (PUT semantics) under a row lock, then published."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts.services import audit

from .models import PiiPolicy
from .selectors import forget, publish_version
from .validation import CleanPolicy


@transaction.atomic
def pii_policy_replace(*, team_id: int, policy: CleanPolicy, actor: str) -> PiiPolicy:
    """Store ``policy`` (already validated by `clean_policy`) as the team's policy, one version on.

    This process forgets its compiled copy now and every process hears of the new version when
    the transaction commits, before the caller returns: traces ingested after that get it.
    """
    PiiPolicy.objects.get_or_create(team_id=team_id)
    row = PiiPolicy.objects.select_for_update().get(team_id=team_id)
    row.stored_mode = policy.stored_mode
    row.destinations = policy.destinations
    row.kinds = policy.kinds
    row.custom_patterns = policy.custom_patterns
    row.version += 1
    row.updated_at = timezone.now()
    row.updated_by = actor
    row.save()
    audit(
        team=team_id,
        actor=actor,
        action="pii_policy.replace",
        target=f"v{row.version}",
        data={
            "stored": policy.stored_mode,
            "destinations": policy.destinations,
            "kinds": policy.kinds,
            "custom_patterns": [p["name"] for p in policy.custom_patterns],
        },
    )
    forget(team_id)
    transaction.on_commit(lambda: publish_version(team_id), robust=True)
    return row
