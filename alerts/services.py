"""Alerts: save one (its webhook signing secret made once and kept encrypted), the built-in
"unpriced traffic" alert every team has, and evaluation: fire once per window when the value
reaches the threshold, resolve when it is back under, notify after the state is committed."""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Membership, Role, Team
from accounts.services import audit
from config import metrics
from config.crypto import encrypt_json
from integrations.models import Integration

from . import notify
from .definition import AlertError, AlertSpec
from .models import BUILTIN_UNPRICED, Alert, AlertEvent, EventKind, Metric, State, WindowType
from .windows import measure, window_at

log = logging.getLogger(__name__)


class NameTaken(ValueError):
    pass


def spec_of(alert: Alert) -> AlertSpec:
    return AlertSpec(
        name=alert.name,
        metric=alert.metric,
        threshold=alert.threshold,
        window_type=alert.window_type,
        window_minutes=alert.window_minutes,
        period=alert.period,
        scope=dict(alert.scope or {}),
        emails=tuple(alert.emails or ()),
        webhooks=tuple(h["url"] for h in alert.webhooks or ()),
        enabled=alert.enabled,
    )


def _apply(alert: Alert, spec: AlertSpec) -> None:
    alert.name, alert.metric, alert.threshold = spec.name, spec.metric, spec.threshold
    alert.window_type, alert.window_minutes, alert.period = spec.window_type, spec.window_minutes, spec.period
    alert.scope, alert.emails = dict(spec.scope), list(spec.emails)
    alert.webhooks = [{"url": url} for url in spec.webhooks]
    alert.enabled = spec.enabled


def _check_integration(team_id: int, spec: AlertSpec) -> None:
    """A delivery metric names an integration of the team (`AlertError` on ``scope.integration``)."""
    name = spec.scope.get("integration")
    if name and not Integration.objects.filter(team_id=team_id, name=name).exists():
        raise AlertError({"scope.integration": [f"No integration named {name!r} in this team."]})


def alert_create(*, team_id: int, spec: AlertSpec, actor: str) -> tuple[Alert, str]:
    """The alert and its webhook signing secret (shown once: only the encrypted form is kept)."""
    _check_integration(team_id, spec)
    secret = "whsec_" + secrets.token_urlsafe(24)
    alert = Alert(team_id=team_id, signing_secret=encrypt_json({"secret": secret}))
    _apply(alert, spec)
    try:
        with transaction.atomic():
            alert.save()
            audit(
                team=team_id, actor=actor, action="alert.create", target=f"alert:{alert.pk}", data={"name": alert.name}
            )
    except IntegrityError:
        raise NameTaken(f"This team already has an alert named {spec.name!r}.")
    return alert, secret


def alert_update(*, alert: Alert, spec: AlertSpec, actor: str) -> Alert:
    if spec.scope.get("integration") != (alert.scope or {}).get("integration"):
        _check_integration(alert.team_id, spec)
    window_changed = (spec.window_type, spec.window_minutes, spec.period, spec.metric, spec.threshold, spec.scope) != (
        alert.window_type,
        alert.window_minutes,
        alert.period,
        alert.metric,
        alert.threshold,
        alert.scope,
    )
    _apply(alert, spec)
    if window_changed:  # judged afresh on the next evaluation (a firing alert resolves if now under)
        alert.fired_window_start = None
    alert.updated_at = timezone.now()
    try:
        with transaction.atomic():
            alert.save()
            audit(team=alert.team_id, actor=actor, action="alert.update", target=f"alert:{alert.pk}")
    except IntegrityError:
        raise NameTaken(f"This team already has an alert named {spec.name!r}.")
    return alert


def alert_delete(*, alert: Alert, actor: str) -> None:
    with transaction.atomic():
        audit(team=alert.team_id, actor=actor, action="alert.delete", target=f"alert:{alert.pk}")
        alert.delete()


def ensure_builtin_alerts() -> int:
    """Every team has the built-in alert on unpriced or usage-less traces (one or more in the last
    hour): a price we do not know is said out loud instead of counting as $0. Teams may turn it off."""
    missing = Team.objects.exclude(alerts__builtin=BUILTIN_UNPRICED).values_list("pk", flat=True)
    made = 0
    for team_id in missing:
        try:
            with transaction.atomic():
                Alert.objects.create(
                    team_id=team_id,
                    name="Unpriced traffic",
                    metric=Metric.UNPRICED,
                    threshold=Decimal(1),
                    window_type=WindowType.ROLLING,
                    window_minutes=60,
                    builtin=BUILTIN_UNPRICED,
                    signing_secret=encrypt_json({"secret": "whsec_" + secrets.token_urlsafe(24)}),
                )
                made += 1
        except IntegrityError:  # (a user alert already has the name, or a racing evaluator made it)
            pass
    return made


@dataclass(frozen=True)
class Outcome:
    alert_id: int
    value: Decimal
    event: str | None  # "fired", "resolved" or None


def evaluate_all(now: datetime | None = None) -> list[Outcome]:
    now = now or timezone.now()
    ensure_builtin_alerts()
    outcomes = []
    for alert_id in Alert.objects.filter(enabled=True).values_list("pk", flat=True):
        try:
            outcome = evaluate(alert_id, now)
            outcomes.append(outcome)
            metrics.record_alert_evaluation(outcome.event or "ok")
        except Exception:
            metrics.record_alert_evaluation("error")
            log.exception("alert %s: evaluation failed", alert_id)
    # Firing alerts that were disabled meanwhile resolve quietly (no notification: someone chose this).
    Alert.objects.filter(enabled=False, state=State.FIRING).update(state=State.OK)
    return outcomes


def evaluate(alert_id: int, now: datetime) -> Outcome:
    with transaction.atomic():
        alert = Alert.objects.select_for_update(skip_locked=True).select_related("team").filter(pk=alert_id).first()
        if alert is None:  # another evaluator holds it (or it is gone)
            return Outcome(alert_id, Decimal(0), None)
        start, end = window_at(alert, now)
        value = measure(alert, start, now)
        over = value >= alert.threshold
        kind: str | None = None
        if alert.state == State.OK and over and alert.fired_window_start != start:
            kind = EventKind.FIRED
            alert.state, alert.fired_window_start = State.FIRING, start
        elif alert.state == State.FIRING and (
            not over or (alert.window_type == "calendar" and alert.fired_window_start != start)
        ):
            kind = EventKind.RESOLVED  # back under, or a new calendar period began
            alert.state = State.OK
            if alert.window_type == WindowType.ROLLING:
                alert.fired_window_start = None  # a rolling window may fire again once it has resolved
        alert.last_value, alert.last_evaluated_at = value, now
        alert.save(update_fields=["state", "fired_window_start", "last_value", "last_evaluated_at"])
        event = None
        if kind is not None:
            event = AlertEvent.objects.create(
                alert=alert,
                kind=kind,
                at=now,
                value=value,
                threshold=alert.threshold,
                window_start=start,
                window_end=end,
            )
    if event is not None:
        event.notifications = notify.notify(alert, event, recipients(alert))
        event.save(update_fields=["notifications"])
    return Outcome(alert.pk, value, kind)


def recipients(alert: Alert) -> list[str]:
    """The alert's addresses; for the built-in alert without any, the team's owners and admins."""
    if alert.builtin and not alert.emails:
        emails = Membership.objects.filter(team_id=alert.team_id, role__in=[Role.OWNER, Role.ADMIN]).values_list(
            "user__email", flat=True
        )
        return sorted({e for e in emails if e})
    return list(alert.emails or [])
