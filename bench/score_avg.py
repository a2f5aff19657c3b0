"""What `score=<name>` adds to `GET /api/v1/analytics` (docs/analytics.md#scores): the time of
`analytics.scores.score_figures` (the one query on the Score table, joined to the filtered traces), over
the trace rows `bench/dashboard.py` makes (its `traces`: one team's traces over 7 days, COPY'd; no
rollups: `dashboard.load`'s rollup step does not match `rollups.build_deltas` any more), a tenth of them
scored `helpfulness` (a number) and a twentieth `thumbs` (a boolean).

    .venv/bin/python bench/score_avg.py                      # 300,000 traces, 15 answers each
    .venv/bin/python bench/score_avg.py --traces 1000000 --runs 20
    .venv/bin/python bench/score_avg.py --reuse              # measure what a previous run loaded

Makes its own database `tracerelay_bench_score_avg` (DATABASE_URL's server, `_benchdb`). Prints p50 and
p95 wall ms of `score_figures` per question, and the baseline beside it: the feed's first page with the
same filters (`traces.selectors.trace_page`, 50 rows), a read every dashboard page makes.
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
        cursor.execute("SELECT id, timestamp FROM traces_trace WHERE team_id = %s ORDER BY timestamp", [team_id])
        picked = cursor.fetchall()[::10]
    rows = []
    for n, (pk, when) in enumerate(picked):
        value = round(rng.random(), 2)
        rows.append((_uuid7(), team_id, pk, "helpfulness", Jsonb(value), value, "numeric", "", "eval", when, when))
        if n % 2 == 0:
            up = rng.random() < 0.8
            rows.append((_uuid7(), team_id, pk, "thumbs", Jsonb(up), float(up), "boolean", "", "human", when, when))
    columns = "id, team_id, trace_id, name, value, number, data_type, comment, source, created_at, trace_timestamp"
    copy_rows("traces_score", columns, rows)
    return len(rows)


def measure(team_id: int, runs: int) -> None:

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

    from traces.selectors import trace_page

    print(f"{'question':<22}{'score_figures p50/p95 ms':>26}{'feed page p50/p95 ms':>24}  scores")
    for name, params in QUESTIONS.items():
        query = selectors.parse_query({**params, "score": "helpfulness"}, now=None, limit=None)
        plan = selectors.plan_for(query, None)

        def score(query=query, plan=plan):  # noqa: ANN001, ANN202
            return score_figures(team_id=team_id, trace_filter=query.trace_filter, plan=plan, name="helpfulness")

        def feed(query=query):  # noqa: ANN001, ANN202
            return trace_page(team_id=team_id, trace_filter=query.trace_filter, limit=50)

        a, b = timed(score), timed(feed)
        print(f"{name:<22}{a[0]:>14.1f}/{a[1]:<11.1f}{b[0]:>12.1f}/{b[1]:<11.1f}{score()['count']:>8,}")


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
    from dashboard import COLUMNS, traces  # bench/dashboard.py's trace rows
    from django.contrib.auth import get_user_model

    from accounts.models import Membership, Role, Team

    rng = random.Random(24)
    if args.reuse:
        team = Team.objects.get(name="bench")
    else:
        t0 = time.perf_counter()
        team = Team.objects.create(name="bench")
        user = get_user_model().objects.create_user(username="bench@example.com", password=uuid.uuid4().hex)
        Membership.objects.create(team=team, user=user, role=Role.OWNER)
        indexes = drop_indexes("traces_trace")
        rows = traces(team.pk, args.traces, datetime.now(UTC), rng)
        while batch := [r for _, r in zip(range(20_000), rows, strict=False)]:
            copy_rows("traces_trace", COLUMNS, batch)
        rebuild_indexes(indexes)
        print(f"loaded {args.traces:,} traces in {time.perf_counter() - t0:.0f} s")
    from traces.models import Score

    if not Score.objects.filter(team=team).exists():
        print(f"{scores(team.pk, rng):,} scores added")
        rebuild_indexes([])  # (VACUUM ANALYZE)
    measure(team.pk, args.runs)


if __name__ == "__main__":
    sys.exit(main())
