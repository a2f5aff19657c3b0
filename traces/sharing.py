"""Public links to one trace (docs/sharing.md): made, listed, revoked and resolved.

A link's token is 256 random bits (`secrets.token_urlsafe(32)`), given out once in its URL; only its
SHA-256 is stored, so the database alone never opens a link. A link lives 7 days by default, at
most 90, and stops working the moment it is revoked. Every make and revoke is in the audit log.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from accounts.services import audit
from config.problems import InvalidInput

from .models import ShareLink, Trace

DEFAULT_DAYS = 7
MAX_DAYS = 90
PATH = "/share/"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_expiry(body: Any) -> int:
    """``{"expires_in_days": n}`` (1–90; optional, 7 by default) from a request body ({} allowed; the
    API passes {} for no body at all, so a JSON ``null`` is refused like any other non-object)."""
    if not isinstance(body, dict):
        raise InvalidInput({"non_field_errors": ['Send a JSON object: {"expires_in_days": n} (optional).']})
    unknown = [str(k)[:100] for k in body if k != "expires_in_days"]
    if unknown:
        raise InvalidInput({k: ["Unknown field. Known: expires_in_days."] for k in unknown})
    days = body.get("expires_in_days", DEFAULT_DAYS)
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise InvalidInput({"expires_in_days": [f"A whole number of days from 1 to {MAX_DAYS}."]})
    return days


def share_create(*, trace: Trace, days: int, actor: str) -> tuple[ShareLink, str]:
    """A new link and its token (returned once)."""
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    link = ShareLink.objects.create(
        team_id=trace.team_id,
        trace=trace,
        token_hash=token_digest(token),
        created_by=actor[:200],
        created_at=now,
        expires_at=now + timedelta(days=days),
    )
    audit(
        team=trace.team_id,
        actor=actor,
        action="trace.share",
        target=trace.trace_id,
        data={"link": link.pk, "expires_at": link.expires_at.isoformat()},
    )
    return link, token


def share_revoke(*, trace: Trace, actor: str, link_id: int | None = None) -> int:
    """Revoke the trace's live links (or the one ``link_id``); how many were live."""
    links = live_links(trace)
    if link_id is not None:
        links = links.filter(pk=link_id)
    ids = list(links.values_list("pk", flat=True))
    if ids:
        ShareLink.objects.filter(pk__in=ids).update(revoked_at=timezone.now())
        audit(team=trace.team_id, actor=actor, action="trace.unshare", target=trace.trace_id, data={"links": ids})
    return len(ids)


def live_links(trace: Trace) -> QuerySet[ShareLink]:
    return ShareLink.objects.filter(trace=trace, revoked_at__isnull=True, expires_at__gt=timezone.now()).order_by(
        "-created_at"
    )


def shared_trace(token: str) -> Trace | None:
    """The trace a live link's token opens; None for an unknown, expired or revoked token."""
    if not token or len(token) > 200:
        return None
    link = (
        ShareLink.objects.filter(token_hash=token_digest(token), revoked_at__isnull=True, expires_at__gt=timezone.now())
        .select_related("trace")
        .first()
    )
    return link.trace if link is not None else None


def run_spans(trace: Trace, limit: int = 500) -> list[Trace]:
    """The spans of the trace's run (itself included), in time order; [trace] for a run of one."""
    if not trace.run_id:
        return [trace]
    return list(Trace.objects.filter(team_id=trace.team_id, run_id=trace.run_id).order_by("timestamp", "id")[:limit])
