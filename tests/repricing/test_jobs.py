"""Re-pricing jobs, carried out in-process (`job_run`, what the worker's task calls): stored traces
priced wrong are priced again as ingest would today; the rollups (every grain, every slice), the
runs and the analytics answer agree with the traces afterwards; a job stopped half-way goes on from
its cursor; delivered traces are sent again only when asked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db.models import Sum
from django.utils import timezone

from accounts.models import AuditEvent
from alerts.models import Alert
from analytics import rollups
from analytics.models import GRAINS, Kind
from analytics.stats import cost_units
from delivery import outbox
from delivery.models import Delivery, DeliveryStatus
from repricing import services
from repricing.definition import JobSpec
from repricing.models import JobStatus, RepriceJob
from traces.models import Run, Trace
from traces.pricing import price
from traces.runs.summary import rebuild
from traces.usage import TokenDetails

from ..factories import IntegrationFactory, TraceFactory

pytestmark = pytest.mark.django_db
START = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)
SPEC = JobSpec(since=START, until=START + timedelta(days=3))


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    """Jobs are run here by hand; deliveries reset are recorded, not published."""
    sent: dict[str, list] = {"jobs": [], "deliveries": []}
    monkeypatch.setattr(services, "dispatch", lambda job_id: sent["jobs"].append(job_id))
    monkeypatch.setattr(outbox, "publish", lambda ids, **kw: sent["deliveries"].extend(ids) or True)
    return sent


def _today(trace: Trace) -> tuple[Decimal | None, bool]:
    p = price(
        model=trace.model,
        provider=trace.provider,
        prompt_tokens=trace.prompt_tokens,
        completion_tokens=trace.completion_tokens,
        timestamp=trace.timestamp,
        details=TokenDetails.of(trace),
        team_id=trace.team_id,
    )
    return p.cost, p.unpriced


def _wrong_history(team, *, n: int = 6, **extra) -> list[Trace]:
    """Calls stored with the wrong figures: a gpt-4o cost 10x too high, cached tokens billed as plain
    input, a model that was unpriced then, and calls that were right already; plus a structural span
    and a trace outside the range."""
    made = []
    for i in range(n):
        at = START + timedelta(hours=2 * i, minutes=i)
        made.append(TraceFactory(team=team, timestamp=at, cost=Decimal("0.0075"), tags=["prod", "a"], **extra))
        made.append(
            TraceFactory(
                team=team,
                timestamp=at + timedelta(seconds=5),
                model="gpt-4o-mini",
                cost=None,
                unpriced=True,
                environment="staging",
                **extra,
            )
        )
        made.append(
            TraceFactory(
                team=team,
                timestamp=at + timedelta(seconds=9),
                prompt_tokens=1000,
                completion_tokens=10,
                total_tokens=1010,
                cached_tokens=800,
                cost=Decimal("0.00260"),  # as if all 1,000 prompt tokens were uncached
                **extra,
            )
        )
        right = TraceFactory.build(team=team, timestamp=at + timedelta(seconds=20), **extra)
        right.cost, right.unpriced = _today(right)
        right.price_version = price(model="gpt-4o", provider="openai", prompt_tokens=1, completion_tokens=1).version
        right.price_source = "genai-prices"
        right.save()
        rebuild(team.id, [right.run_id])
        made.append(right)
    TraceFactory(team=team, timestamp=START + timedelta(minutes=1), kind="tool", model="", cost=None)
    TraceFactory(team=team, timestamp=START - timedelta(minutes=1), cost=Decimal("9"))  # before since
    return made


def _rollup_cost(team, grain: str, **where) -> int:
    model = GRAINS[grain][1]
    return model.objects.filter(team=team, **where).aggregate(v=Sum("cost_e10"))["v"] or 0


def _rollup_unpriced(team, grain: str, **where) -> int:
    model = GRAINS[grain][1]
    return model.objects.filter(team=team, **where).aggregate(v=Sum("unpriced"))["v"] or 0


def _trace_cost(team, **where) -> int:
    calls = Trace.objects.filter(team=team, kind__in=["llm", "embedding"], **where)
    return sum(cost_units(c) for c in calls.values_list("cost", flat=True))


def test_a_job_prices_the_range_again_and_the_sums_follow(team, api):
    made = _wrong_history(team)
    assert rollups.fold() > 0
    job = services.job_create(team_id=team.id, spec=SPEC, actor="user:owner")
    job = services.job_run(job_id=job.pk)

    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.traces_total == job.traces_done == len(made)
    assert job.traces_changed == 3 * 6  # the right ones stay
    for trace in made:
        trace.refresh_from_db()
        cost, unpriced = _today(trace)
        assert (trace.cost, trace.unpriced) == (cost, unpriced)
        assert trace.price_source == "genai-prices" and trace.price_version
    cached = next(t for t in made if t.cached_tokens)
    assert cached.cost < price(model="gpt-4o", provider="openai", prompt_tokens=1000, completion_tokens=10).cost
    outside = Trace.objects.get(team=team, timestamp=START - timedelta(minutes=1))
    assert outside.cost == Decimal("9")  # out of the range: untouched

    for grain in GRAINS:
        assert _rollup_cost(team, grain, kind=Kind.ALL) == _trace_cost(team), grain
        assert _rollup_unpriced(team, grain, kind=Kind.ALL) == 0, grain
        assert _rollup_cost(team, grain, kind=Kind.MODEL, key="gpt-4o-mini") == _trace_cost(team, model="gpt-4o-mini")
        assert _rollup_cost(team, grain, kind=Kind.ENVIRONMENT, key="staging") == _trace_cost(
            team, environment="staging"
        )
        assert _rollup_cost(team, grain, kind=Kind.TAG, key="prod") == _trace_cost(team, tags__contains=["prod"])
        assert _rollup_cost(team, grain, kind=Kind.DIMS) == _trace_cost(team)
    body = api.get(
        "/api/v1/analytics", {"since": (START - timedelta(hours=1)).isoformat(), "until": SPEC.until.isoformat()}
    ).json()
    assert body["totals"]["unpriced"] == 0
    assert round(body["totals"]["cost"], 8) == round(float(_trace_cost(team)) / 1e10, 8)
    for run in Run.objects.filter(team=team):
        calls = Trace.objects.filter(team=team, run_id=run.run_id, kind__in=["llm", "embedding"])
        assert run.cost == sum((t.cost or 0 for t in calls), Decimal(0))
        assert run.unpriced_calls == sum(1 for t in calls if t.unpriced or t.cost is None)

    assert job.cost_before == sum((Decimal("0.0075") + Decimal("0.00260") for _ in range(6)), Decimal(0)) + sum(
        (t.cost for t in made[3::4]), Decimal(0)
    )
    assert job.cost_after == sum((t.cost or 0 for t in made), Decimal(0))
    assert job.by_model["gpt-4o-mini"]["traces"] == 6 and job.by_model["gpt-4o-mini"]["changed"] == 6
    assert Decimal(job.by_model["gpt-4o-mini"]["cost_before"]) == 0
    event = AuditEvent.objects.get(team=team, action="prices.reprice")
    assert event.actor == "user:owner" and event.target == f"reprice:{job.pk}"
    assert event.data["traces_changed"] == job.traces_changed and event.data["cost_after"] == str(job.cost_after)


def test_a_second_job_changes_nothing(team):
    _wrong_history(team, n=2)
    rollups.fold()
    first = services.job_run(job_id=services.job_create(team_id=team.id, spec=SPEC, actor="t").pk)
    before = {g: _rollup_cost(team, g, kind=Kind.ALL) for g in GRAINS}
    second = services.job_run(job_id=services.job_create(team_id=team.id, spec=SPEC, actor="t").pk)
    assert first.traces_changed == 6 and second.traces_changed == 0
    assert second.cost_before == second.cost_after == first.cost_after
    assert {g: _rollup_cost(team, g, kind=Kind.ALL) for g in GRAINS} == before


@pytest.mark.parametrize(("model", "changed"), [("gpt-4o", 4), ("gpt-4o-m*", 2), ("gpt*", 6), ("claude*", 0)])
def test_the_model_picks_the_traces(team, model, changed):
    _wrong_history(team, n=2)
    spec = JobSpec(since=SPEC.since, until=SPEC.until, model=model)
    job = services.job_run(job_id=services.job_create(team_id=team.id, spec=spec, actor="t").pk)
    assert job.status == JobStatus.SUCCEEDED and job.traces_changed == changed
    assert (Trace.objects.get(team=team, model="gpt-4o-mini", timestamp=START + timedelta(seconds=5)).unpriced) is (
        changed in (0, 4)
    )


def test_another_teams_traces_are_not_touched(team, other_team):
    theirs = TraceFactory(team=other_team, timestamp=START + timedelta(hours=1), cost=Decimal("5"))
    _wrong_history(team, n=1)
    services.job_run(job_id=services.job_create(team_id=team.id, spec=SPEC, actor="t").pk)
    theirs.refresh_from_db()
    assert theirs.cost == Decimal("5")


def test_a_job_stopped_half_way_goes_on_where_it_left_off(
    team, settings, no_broker, django_capture_on_commit_callbacks
):
    settings.TRACERELAY_REPRICE_CHUNK = 5
    made = _wrong_history(team)
    rollups.fold()
    with django_capture_on_commit_callbacks(execute=True):
        job = services.job_create(team_id=team.id, spec=SPEC, actor="t")
    assert no_broker["jobs"] == [job.pk]
    half = services.job_run(job_id=job.pk, chunks=2)  # the worker stops after two chunks
    assert half.status == JobStatus.RUNNING and half.traces_done == 10 and half.cursor_id is not None
    assert services.job_run(job_id=job.pk) is None  # its claim is fresh: no other worker takes it
    assert services.sweep() == []

    later = timezone.now() + services.stale_after() + timedelta(seconds=1)
    assert services.sweep(now=later) == [job.pk]  # the claim went silent: queued again
    RepriceJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - services.stale_after() * 2)
    done = services.job_run(job_id=job.pk)
    assert done.status == JobStatus.SUCCEEDED and done.attempts == 2
    assert done.traces_done == done.traces_total == len(made)  # each trace once
    assert done.traces_changed == 18
    for grain in GRAINS:
        assert _rollup_cost(team, grain, kind=Kind.ALL) == _trace_cost(team)
    assert done.cost_after == sum((t.cost or 0 for t in Trace.objects.filter(id__in=[m.id for m in made])), Decimal(0))


def test_two_workers_never_hold_one_job(team):
    job = services.job_create(team_id=team.id, spec=SPEC, actor="t")
    assert services.claim(job.pk) is not None
    assert services.claim(job.pk) is None
    late = timezone.now() + services.stale_after() + timedelta(seconds=1)
    token = services.claim(job.pk, now=late)
    assert token is not None
    RepriceJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - services.stale_after() * 2)
    with pytest.raises(services.LostClaim):  # the first worker's claim is gone: its next chunk stops
        services._chunk(job.pk, services.uuid.uuid4())


def test_a_failure_is_recorded_on_the_job(team, monkeypatch):
    _wrong_history(team, n=1)

    def broken(**kwargs):
        raise RuntimeError("pricing data unreadable")

    monkeypatch.setattr(services, "price", broken)
    job = services.job_run(job_id=services.job_create(team_id=team.id, spec=SPEC, actor="t").pk)
    assert job.status == JobStatus.FAILED and "pricing data unreadable" in job.error
    assert job.traces_done == 0 and Trace.objects.get(team=team, model="gpt-4o-mini").unpriced  # rolled back
    assert AuditEvent.objects.get(team=team, action="prices.reprice").data["status"] == "failed"


def _delivered(team, traces):
    integration = IntegrationFactory(team=team, name="hook")
    rows = []
    for trace in traces:
        rows.append(
            Delivery.objects.create(
                team=team,
                trace=trace,
                destination="hook",
                integration=integration,
                status=DeliveryStatus.DELIVERED,
                delivered_at=timezone.now(),
                batch_id=services.uuid.uuid4(),
            )
        )
    return rows


@pytest.mark.parametrize("redeliver", [False, True])
def test_delivered_traces_are_sent_again_only_when_asked(
    team, redeliver, no_broker, django_capture_on_commit_callbacks
):
    made = _wrong_history(team, n=1)
    rows = _delivered(team, made)
    spec = JobSpec(since=SPEC.since, until=SPEC.until, redeliver=redeliver)
    with django_capture_on_commit_callbacks(execute=True):
        job = services.job_run(job_id=services.job_create(team_id=team.id, spec=spec, actor="t").pk)
    changed = {t.pk for t in made[:3]}
    for row in rows:
        row.refresh_from_db()
        again = redeliver and row.trace_id in changed
        assert row.status == (DeliveryStatus.PENDING if again else DeliveryStatus.DELIVERED)
        assert (row.batch_id is None) is again
    assert job.deliveries_requeued == (3 if redeliver else 0)
    assert sorted(no_broker["deliveries"]) == (sorted(r.pk for r in rows if r.trace_id in changed) if redeliver else [])
    assert Delivery.objects.filter(team=team).count() == 4  # reset, not copied


def test_the_teams_cost_alerts_are_measured_again(team):
    now = timezone.now()
    TraceFactory(team=team, timestamp=now - timedelta(minutes=10), cost=Decimal("50"))
    rollups.fold()
    alert = Alert.objects.create(
        team=team, name="budget", metric="cost", threshold=Decimal("10"), window_type="rolling", window_minutes=60
    )
    spec = JobSpec(since=now - timedelta(hours=1), until=now)
    job = services.job_run(job_id=services.job_create(team_id=team.id, spec=spec, actor="t").pk)
    assert job.traces_changed == 1
    alert.refresh_from_db()
    assert alert.last_value == price(model="gpt-4o", provider="openai", prompt_tokens=100, completion_tokens=50).cost


@pytest.mark.django_db(transaction=True)
def test_a_trace_the_fold_has_not_counted_yet_is_counted_at_its_new_price(team):
    """Each in its own transaction, as in production: the folded trace's rollups are corrected, the
    pending one is left to the fold, which reads its new cost."""
    folded = TraceFactory(team=team, timestamp=START + timedelta(hours=1), cost=Decimal("1"))
    rollups.fold()
    pending = TraceFactory(team=team, timestamp=START + timedelta(hours=1, minutes=1), cost=Decimal("2"))
    job = services.job_run(job_id=services.job_create(team_id=team.id, spec=SPEC, actor="t").pk)
    assert job.traces_changed == 2
    folded.refresh_from_db()
    pending.refresh_from_db()
    assert _rollup_cost(team, "hour", kind=Kind.ALL) == cost_units(folded.cost)  # not -1 + the new: never counted
    rollups.fold()
    for grain in GRAINS:
        assert _rollup_cost(team, grain, kind=Kind.ALL) == cost_units(folded.cost) + cost_units(pending.cost)
