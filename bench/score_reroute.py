"""What the sweeper's second look at score routing costs a pass (`delivery.scores.reroute_scores`,
docs/scores.md "Where a score goes"): the recent scores are scanned for a destination their trace
was delivered to that has no row for them.

    .venv/bin/python bench/score_reroute.py [--scores 20000] [--reuse]

Writes ``--scores`` scores of the last hour, each on its own trace delivered to two destinations
and routed to both (the normal case: nothing to do), in a database of its own
(``tracerelay_bench_scores``), then times (median of 5):

* a pass that looks back the whole hour (the cache forgot where the last pass stopped: worst case);
* a pass from where the last one stopped (the sweeper's usual pass, every 30 s);
* the sweeper's existing scores work (`sweep_scores` without the new look), the baseline;
* a pass that finds 1,000 lost scores and routes them again (rows written, publishing stubbed).

Prints figures only.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchdb import recreate_database, use_database  # noqa: E402

use_database("tracerelay_bench_scores")


def _median_ms(fn, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _load(count: int) -> None:
    from django.utils import timezone

    from accounts.models import Team
    from delivery.models import Delivery, DeliveryStatus, ScoreDelivery
    from traces.ids import new_trace_id
    from traces.models import Score, Trace

    team = Team.objects.create(name="bench")
    now = timezone.now()
    for start in range(0, count, 2000):
        size = min(2000, count - start)
        traces = Trace.objects.bulk_create(
            Trace(
                team_id=team.pk,
                trace_id=new_trace_id(),
                model="gpt-4o",
                provider="openai",
                latency_ms=400,
                timestamp=now,
                received_at=now,
            )
            for _ in range(size)
        )
        deliveries = Delivery.objects.bulk_create(
            Delivery(
                team_id=team.pk,
                trace=t,
                destination=name,
                spec={"name": name, "tags": [], "fallback": []},
                status=DeliveryStatus.DELIVERED,
            )
            for t in traces
            for name in ("hook", "otlp")
        )
        scores = Score.objects.bulk_create(
            Score(
                # Spread over the last hour, as UUIDv7 ids of their time.
                id=uuid.UUID(
                    int=(int((now - timedelta(seconds=3500 * (start + i) / count + 40)).timestamp() * 1000) << 80)
                    | secrets.randbits(80)
                ),
                team_id=team.pk,
                trace=t,
                name="q",
                value=1,
                number=1.0,
                data_type="numeric",
            )
            for i, t in enumerate(traces)
        )
        ScoreDelivery.objects.bulk_create(
            ScoreDelivery(
                team_id=team.pk, score=s, delivery=d, destination=d.destination, status="delivered", next_attempt_at=now
            )
            for s, pair in zip(scores, zip(deliveries[0::2], deliveries[1::2], strict=True), strict=True)
            for d in pair
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scores", type=int, default=20_000)
    parser.add_argument("--reuse", action="store_true", help="keep the database of the last run")
    args = parser.parse_args()
    if not args.reuse:
        recreate_database()
    import django

    django.setup()
    from django.core.cache import cache
    from django.db import connection
    from django.utils import timezone

    from delivery import scores as score_routing
    from delivery.models import ScoreDelivery

    if not args.reuse:
        _load(args.scores)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE traces_score, routing_delivery, delivery_score")
    score_routing.publish = lambda ids, *, countdown=None: True  # no broker here

    def whole_hour() -> None:
        cache.delete(score_routing.REROUTE_MARK)
        assert score_routing.reroute_scores() == 0

    def from_the_mark() -> None:
        cache.set(score_routing.REROUTE_MARK, (timezone.now() - timedelta(seconds=60)).timestamp())
        assert score_routing.reroute_scores() == 0

    def baseline() -> None:
        original = score_routing.reroute_scores
        score_routing.reroute_scores = lambda **kw: 0
        try:
            score_routing.sweep_scores()
        finally:
            score_routing.reroute_scores = original

    print(f"scores in the last hour: {args.scores:,} (each routed to 2 destinations)")
    print(f"sweep_scores without the second look (baseline): {_median_ms(baseline):8.1f} ms")
    print(f"reroute pass, the whole hour (cache forgot):     {_median_ms(whole_hour):8.1f} ms")
    print(f"reroute pass, from the last pass's mark:         {_median_ms(from_the_mark):8.1f} ms")

    lost = list(ScoreDelivery.objects.order_by("-score_id").values_list("score_id", flat=True)[:2000:2])[:1000]
    ScoreDelivery.objects.filter(score_id__in=lost).delete()
    cache.delete(score_routing.REROUTE_MARK)
    started = time.perf_counter()
    found = score_routing.reroute_scores()
    took = (time.perf_counter() - started) * 1000
    print(f"reroute pass finding {found:,} lost scores (2 rows each): {took:8.1f} ms")


if __name__ == "__main__":
    main()
