"""What traces not folded yet cost a read (`analytics.pending`): answers with N traces pending
against the same answers with none, per pending trace.

    .venv/bin/python bench/analytics_pending.py [--pending 5000] [--runs 15]

Uses bench/analytics_write.py's database (`BENCH_DB`, made and migrated if missing) and its team;
ingests batches of its realistic mix until the team has ``--pending`` traces, folds everything,
then for each query: 15 answers with nothing pending, and 15 with the newest ``--pending`` traces
made pending again (their ``rollup_xid`` set to the id of a transaction that is rolled back, which
the fold's snapshot does not see, so they count twice meanwhile: only the time matters here).
Prints the median CPU (this process) and wall time per answer and their difference per pending
trace, with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from analytics_write import _bench_team, _prepare, _realistic

QUERIES: list[dict[str, str]] = [
    {},
    {"group_by": "model"},
    {"group_by": "tag"},
    {"provider": "openai", "group_by": "status"},
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pending", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    _prepare()
    import django

    django.setup()
    from django.db import connection, transaction

    from analytics import rollups
    from analytics.selectors import analytics_for_team, parse_query
    from pipeline.services import traces_ingest
    from traces.models import Trace

    team, principal = _bench_team()
    while Trace.objects.filter(team=team).count() < args.pending:
        traces_ingest(principal=principal, items=_realistic(1000), source="batch")
    rollups.fold()
    rows = list(Trace.objects.filter(team=team).order_by("-timestamp")[: args.pending])

    def answer(params: dict[str, str]) -> tuple[float, float]:
        query = parse_query(params, now=None, limit=None)
        c, t = time.process_time(), time.perf_counter()
        analytics_for_team(team_id=team.id, query=query)
        return time.process_time() - c, time.perf_counter() - t

    load = os.getloadavg()[0]
    print(f"{args.pending:,} traces pending against none, {args.runs} answers each, load average {load:.1f}")
    for params in QUERIES:
        medians: dict[int, tuple[float, float]] = {}
        for n in (0, args.pending):
            with transaction.atomic():
                if n:
                    with connection.cursor() as cursor:
                        cursor.execute(
                            "UPDATE traces_trace SET rollup_xid = pg_current_xact_id() WHERE id = ANY(%s)",
                            [[t.id for t in rows[:n]]],
                        )
                for _ in range(3):
                    answer(params)
                runs: list[Any] = [answer(params) for _ in range(args.runs)]
                transaction.set_rollback(True)
            medians[n] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
        (cpu0, wall0), (cpu1, wall1) = medians[0], medians[args.pending]
        print(
            f"  {params or 'default (24 h)'}: none {cpu0 * 1e3:.1f} ms CPU / {wall0 * 1e3:.1f} ms wall, "
            f"pending {cpu1 * 1e3:.1f} / {wall1 * 1e3:.1f} ms: {(cpu1 - cpu0) / args.pending * 1e6:.1f} µs CPU, "
            f"{(wall1 - wall0) / args.pending * 1e6:.1f} µs wall per pending trace"
        )
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
