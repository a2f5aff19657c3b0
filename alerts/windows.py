"""An alert's window at a moment, and the value it measures over it.

Rolling windows end now and are measured from the raw traces to the second (an index range on
(team, timestamp)). Calendar windows (UTC day, ISO week from Monday, month) start at a day
boundary, so when the scope is one the rollups hold (not user or service) they are read from the
rollups, as `GET /api/v1/analytics` does: a month stays cheap at millions of traces.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db.models import Count, Min, Q, Sum

from analytics.selectors import AnalyticsError, analytics_for_team, parse_query
from delivery.models import Delivery, DeliveryStatus
from delivery.selectors import of_integration
from integrations.models import Integration
from traces.filters import TraceFilter
from traces.models import calls_only
from traces.selectors import traces_for_team

from .models import DELIVERY_METRICS, Alert, Metric, Period, WindowType

ROLLUP_SCOPE = {"model", "tag", "environment"}


def window_at(alert: Alert, now: datetime) -> tuple[datetime, datetime]:
    """[start, end) of the window holding ``now`` (rolling: the minutes before it)."""
    if alert.window_type == WindowType.ROLLING:
        return now - timedelta(minutes=alert.window_minutes or 0), now
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if alert.period == Period.DAY:
        return day, day + timedelta(days=1)
    if alert.period == Period.WEEK:
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    start = day.replace(day=1)
    end = (start + timedelta(days=32)).replace(day=1)
    return start, end


def measure(alert: Alert, start: datetime, now: datetime) -> Decimal:
    """The alert's metric over [start, now): USD of priced traces, total tokens, or the count of
    unpriced and usage-estimated traces (the built-in alert); for an integration's deliveries,
    `delivery_measure`."""
    scope = alert.scope or {}
    if alert.metric in DELIVERY_METRICS:
        return delivery_measure(alert, start, now)
    end = min(now, window_at(alert, now)[1])
    if alert.window_type == WindowType.CALENDAR and alert.metric != Metric.UNPRICED and set(scope) <= ROLLUP_SCOPE:
        try:
            return _from_rollups(alert, scope, start, end)
        except AnalyticsError:
            pass  # (a tag with other filters, say): count raw below
    f = TraceFilter(
        model=scope.get("model", ""),
        tags=(scope["tag"],) if scope.get("tag") else (),
        environment=scope.get("environment", ""),
        user_id=scope.get("user_id", ""),
        since=start,
        until=end,
    )
    qs = calls_only(traces_for_team(alert.team_id, f))  # a run's structural spans are no calls
    if scope.get("service_name"):
        qs = qs.filter(service_name=scope["service_name"])
    if alert.metric == Metric.COST:
        return qs.aggregate(v=Sum("cost"))["v"] or Decimal(0)
    if alert.metric == Metric.TOKENS:
        return Decimal(qs.aggregate(v=Sum("total_tokens"))["v"] or 0)
    return Decimal(qs.aggregate(v=Count("pk", filter=Q(unpriced=True) | Q(usage_estimated=True)))["v"])


def delivery_measure(alert: Alert, start: datetime, now: datetime) -> Decimal:
    """An integration's deliveries (scope ``integration``, by name):

    * ``delivery_failure_rate``: of its deliveries created in the window that are settled
      (delivered, failed or dead), the fraction failed or dead; 0 when none settled;
    * ``dead_letters``: its deliveries dead-lettered in the window;
    * ``oldest_pending_s``: seconds since its oldest delivery still waiting (pending or being sent)
      was created, now, whatever the window; 0 when none waits.

    An integration renamed or deleted since measures 0 (nothing of it is found)."""
    name = (alert.scope or {}).get("integration", "")
    integration = Integration.objects.filter(team_id=alert.team_id, name=name).values_list("pk", flat=True).first()
    if integration is None:
        return Decimal(0)
    rows = Delivery.objects.filter(of_integration(integration, name), team_id=alert.team_id)
    if alert.metric == Metric.DEAD_LETTERS:
        count = rows.filter(status=DeliveryStatus.DEAD, updated_at__gte=start, updated_at__lt=now).count()
        return Decimal(count)
    if alert.metric == Metric.OLDEST_PENDING_S:
        waiting = [DeliveryStatus.PENDING, DeliveryStatus.SENDING]
        oldest = rows.filter(status__in=waiting).aggregate(v=Min("created_at"))["v"]
        return Decimal(max(0, int((now - oldest).total_seconds()))) if oldest else Decimal(0)
    failed = [DeliveryStatus.FAILED, DeliveryStatus.DEAD]
    counts = rows.filter(created_at__gte=start, created_at__lt=now).aggregate(
        settled=Count("pk", filter=Q(status__in=[*failed, DeliveryStatus.DELIVERED])),
        failed=Count("pk", filter=Q(status__in=failed)),
    )
    if not counts["settled"]:
        return Decimal(0)
    return (Decimal(counts["failed"]) / Decimal(counts["settled"])).quantize(Decimal("1e-6"))


def _from_rollups(alert: Alert, scope: dict[str, str], start: datetime, end: datetime) -> Decimal:
    params = {k: v for k, v in scope.items()}
    params.update(
        since=start.isoformat(), until=end.isoformat(), interval="day" if end - start > timedelta(days=2) else "hour"
    )
    query = parse_query(params, now=end, limit=None)
    totals = analytics_for_team(team_id=alert.team_id, query=query, now=end)["totals"]
    if alert.metric == Metric.COST:
        return Decimal(str(totals["cost"]))
    return Decimal(totals["total_tokens"])
