"""What `score=<name>` adds to `GET /api/v1/analytics` (docs/analytics.md#scores): the answer's time
with and without the score's average, over the traces `bench/dashboard.py` loads (its `load`: one
team's traces over 7 days with their rollups), a tenth of them scored `helpfulness` (a number) and a
twentieth `thumbs` (a boolean).

    .venv/bin/python bench/score_avg.py                      # 300,000 traces, 15 answers each
    .venv/bin/python bench/score_avg.py --traces 1000000 --runs 20
    .venv/bin/python bench/score_avg.py --reuse              # measure what a previous run loaded

Makes its own database `tracerelay_bench_score_avg` (DATABASE_URL's server, `_benchdb`). Prints p50 and
p95 wall ms of `analytics.selectors.analytics_for_team` for each question: the baseline (no score),
the same with `score=helpfulness`, and `score_figures` alone (the one query on the Score table).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime

from _benchdb import ROOT, copy_rows, drop_indexes, rebuild_indexes, recreate_database, use_database

DB = "tracerelay_bench_score_avg"
QUESTIONS = {
    "24 h": {"time_range": "24h"},
    "7 d, per day": {"time_range": "7d", "interval": "day"},
    "7 d, model=gpt-4o": {"time_range": "7d", "model": "gpt-4o"},
}


def scores(team_id: int, rng: random.Random) -> int:
    """COPY a score for every 10th trace (helpfulness, a number) and every 20th (thumbs, a boolean)."""
    from django.db import connection
    from psycopg.types.json import Jsonb

    from traces.models import _uuid7

    with connection.cursor() as cursor:
        cursor.execute("SELECT id, timestamp FROM traces_trace WHERE team_id = %s AND id %% 10 = 0", [team_id])
        picked = cursor.fetchall()
    rows = []
    for pk, when in picked:
        value = round(rng.random(), 2)
        rows.append((_uuid7(), team_id, pk, "helpfulness", Jsonb(value), value, "numeric", "", "eval", when))
        if pk % 20 == 0:
            up = rng.random() < 0.8
            rows.append((_uuid7(), team_id, pk, "thumbs", Jsonb(up), float(up), "boolean", "", "human", when))
    columns = "id, team_id, trace_id, name, value, number, data_type, comment, source, created_at"
    copy_rows("traces_score", columns, rows)
    return len(rows)


def measure(team_id: int, runs: int) -> None:
    from django.http import QueryDict

    from analytics import selectors
    from analytics.scores import score_figures

    def timed(fn) -> tuple[float, float]:
        for _ in range(2):
            fn()
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]

    print(f"{'question':<22}{'answer p50/p95 ms':>20}{'+score p50/p95 ms':>20}{'score query p50/p95':>22}  scores")
    for name, params in QUESTIONS.items():
        base = selectors.parse_query(QueryDict(mode="w") | params, now=None, limit=None)
        scored = {**params, "score": "helpfulness"}
        with_score = selectors.parse_query(QueryDict(mode="w") | scored, now=None, limit=None)
        plan = selectors.plan_for(with_score, None)

        def answer(query=base):  # noqa: ANN001, ANN202
            return selectors.analytics_for_team(team_id=team_id, query=query)

        def score(query=with_score, plan=plan):  # noqa: ANN001, ANN202
            return score_figures(team_id=team_id, trace_filter=query.trace_filter, plan=plan, name="helpfulness")

        a, b, c = timed(answer), timed(lambda query=with_score: answer(query)), timed(score)
        print(f"{name:<22}{a[0]:>10.1f}/{a[1]:<9.1f}{b[0]:>10.1f}/{b[1]:<9.1f}{c[0]:>11.1f}/{c[1]:<10.1f}"
              f"{score()['count']:>8,}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    use_database(DB)
    sys.path.insert(0, str(ROOT))  # the project's `analytics` before this folder's analytics.py
    import django

    if not args.reuse:
        recreate_database()
    django.setup()
    from dashboard import load  # bench/dashboard.py: the traces, their deliveries and rollups
    from django.contrib.auth import get_user_model

    from accounts.models import Membership, Role, Team
    from analytics import snapshots

    rng = random.Random(24)
    if args.reuse:
        team = Team.objects.get(name="bench")
    else:
        t0 = time.perf_counter()
        team = Team.objects.create(name="bench")
        user = get_user_model().objects.create_user(username="bench@example.com", password=uuid.uuid4().hex)
        Membership.objects.create(team=team, user=user, role=Role.OWNER)
        indexes = drop_indexes("traces_trace") + drop_indexes("routing_delivery") + drop_indexes("traces_score")
        load(team.pk, args.traces, datetime.now(UTC), rng)
        snapshots.all_folded()
        rebuild_indexes(indexes)
        print(f"loaded {args.traces:,} traces and {scores(team.pk, rng):,} scores in {time.perf_counter() - t0:.0f} s")
        rebuild_indexes([])
    measure(team.pk, args.runs)


if __name__ == "__main__":
    sys.exit(main())
