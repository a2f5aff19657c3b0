"""How long a board of 8 widgets takes to open, over the traces `bench/analytics.py` loaded.

    BENCH_DB=tracerelay_bench_analytics .venv/bin/python bench/dashboards.py --runs 15

Reuses the database `bench/analytics.py` filled (`BENCH_DB`; its team "bench"), migrates it (the
dashboards table), saves a board of 8 widgets (`BOARD`: a number, lines, bars and tables over 24
hours to 30 days, two of them per group) and prints, in the same run, wall p50/p95 and this
process's CPU (median) and the Postgres backend's CPU (mean, /proc/<pid>/stat) for:

- each widget's answer alone (`dashboards.answers.widget_answer`, the analytics selectors);
- the 8 answers in a row;
- the board page `/dashboards/<id>` (answers, cards, SVG, template) through Django's test client,
  signed in as a member;
- the baseline: the `/analytics` page (24 hours) in the same run.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchdb import ROOT, database_name, use_database  # noqa: E402

use_database(os.environ.get("BENCH_DB", "tracerelay_bench_analytics"))

BOARD: list[dict[str, Any]] = [
    {"title": "Cost today", "metric": "cost", "chart": "number", "time_range": "24h"},
    {"title": "Calls per hour", "metric": "count", "chart": "line", "time_range": "24h", "interval": "hour"},
    {"title": "Error rate per hour", "metric": "error_rate", "chart": "bar", "time_range": "24h"},
    {"title": "Cost by model, 7 days", "metric": "cost", "chart": "bar", "group_by": "model", "time_range": "7d"},
    {"title": "Latency p95 by provider", "metric": "latency_p95", "chart": "line", "group_by": "provider"},
    {"title": "Tokens per day", "metric": "total_tokens", "chart": "line", "time_range": "30d", "interval": "day"},
    {"title": "Failed calls by tag", "metric": "errors", "chart": "table", "group_by": "tag", "time_range": "7d"},
    {
        "title": "OpenAI p95, 7 days",
        "metric": "latency_p95",
        "chart": "number",
        "time_range": "7d",
        "filters": {"provider": "openai"},
    },
]


def _backend_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(fn: Callable[[], Any], runs: int, pid: int) -> tuple[float, float, float, float]:
    """Wall p50 and p95 (ms), median CPU of this process and mean CPU of the Postgres backend (ms)
    of ``runs`` calls after one not counted."""
    times, cpu = [], []
    fn()
    pg_before = _backend_cpu_s(pid)
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    pg_ms = (_backend_cpu_s(pid) - pg_before) * 1000 / runs
    times.sort()
    p95 = times[min(len(times) - 1, math.ceil(len(times) * 0.95) - 1)]
    return statistics.median(times), p95, statistics.median(cpu), pg_ms


def line(name: str, figures: tuple[float, float, float, float]) -> None:
    p50, p95, cpu, pg = figures
    print(f"{name:<44} {p50:>7.1f} ms {p95:>7.1f} ms {cpu:>7.1f} ms {pg:>7.1f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, check=True)
    import django

    django.setup()
    import uuid

    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from accounts.models import Membership, Role, Team
    from dashboards import services
    from dashboards.answers import widget_answer
    from dashboards.definition import parse_board
    from dashboards.models import Dashboard

    team = Team.objects.get(name="bench")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM traces_trace WHERE team_id = %s", [team.pk])
        traces = cursor.fetchone()[0]
    Dashboard.objects.filter(team=team, name="bench board").delete()
    board = parse_board({"name": "bench board", "widgets": BOARD})
    dashboard = services.dashboard_create(team_id=team.pk, board=board, actor="bench")
    member = Membership.objects.filter(team=team).select_related("user").first()
    if member is None:
        user = get_user_model().objects.create_user(username="bench@example.com", password=uuid.uuid4().hex)
        Membership.objects.create(team=team, user=user, role=Role.OWNER)
    else:
        user = member.user
    client = Client()
    client.force_login(user)

    def page(path: str) -> Callable[[], None]:
        def get() -> None:
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)

        return get

    print(f"{database_name()}: {traces:,} traces of team bench; {args.runs} runs each, the first not counted")
    print(f"load average {os.getloadavg()[0]:.1f} (2 cores, shared)")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    print(f"{'':<44} {'p50':>10} {'p95':>10} {'py cpu':>10} {'pg cpu':>10}")
    for widget in board.widgets:
        answer = widget_answer(team_id=team.pk, widget=widget)
        assert not answer.error, (widget["title"], answer.error)
        line(
            f"widget: {widget['title']}",
            timed(lambda w=widget: widget_answer(team_id=team.pk, widget=w), args.runs, pid),
        )
    line(
        "the 8 answers in a row",
        timed(lambda: [widget_answer(team_id=team.pk, widget=w) for w in board.widgets], args.runs, pid),
    )
    line(f"page /dashboards/{dashboard.pk}", timed(page(f"/dashboards/{dashboard.pk}"), args.runs, pid))
    line("baseline: page /analytics (24 h)", timed(page("/analytics"), args.runs, pid))
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    services.dashboard_delete(dashboard=dashboard, actor="bench")


if __name__ == "__main__":
    main()
