"""Dashboard page latency with a real backlog: p50/p95 server time of the dashboard's pages.

    .venv/bin/python bench/dashboard.py                    # 1M traces, 50 requests per page
    .venv/bin/python bench/dashboard.py --traces 200000 --runs 30
    .venv/bin/python bench/dashboard.py --reuse            # measure what a previous run loaded

Makes its own Postgres database `tracerelay_bench_dashboard` (DATABASE_URL's server; `_benchdb`; another
name with --database, so two people can bench at once),
migrates it and loads N traces of one team over the last 7 days with COPY (10 models, 94% success,
0-3 of 25 tags, metadata, 2,000 users, sessions of ~8 calls, one or two of 4 destinations, routing
decisions, prompts and replies), with the trace and delivery tables' secondary indexes dropped for
the load and built again after it, then VACUUM ANALYZE. Each routed destination gets its delivery row
(the outbox: 96% delivered, 1.5% dead, 1% failed, 1.5% still pending, the last 10 minutes pending
and not yet resolved to an integration), and the team has one integration per destination. The
rollups (`/analytics`) are made by the fold's own code: `analytics.rollups.build_deltas` per batch,
added into the rollups by `rollups.add_deltas`. A second team gets a tenth as many traces, so the team filter matters.

Each page is requested through Django's test client (the whole stack: middleware, session, the
`team_view` check, the selectors, the template), signed in as the team's owner; the time is the
wall time of `client.get` in this process, and "cpu" is this process's CPU time for it (Django's
side only: Postgres works in its own process). The pages:

- feed: `/traces`, the first page (50 rows)
- filtered: `/traces?model=gpt-4o&status=error&tag=tag-03&time_range=7d`
- filtered, page 5: the same filter's fifth page (the cursor infinite scroll follows), where
  Postgres's default costs chose a bitmap of every row the filter's indexes match
- live: `/traces/live?after=<the newest row's cursor>`, the 2 s poll (nothing new, as most polls)
- live+10: the poll with 10 newer rows to send
- detail: `/traces/<id>` of a random trace (with its deliveries)
- sessions, users: `/sessions`, `/users` (the last 24 hours)
- analytics: `/analytics` (the last 24 hours: figures, series and three breakdowns)
- integrations: `/integrations` (the last 24 h of deliveries by status) and one integration's page

With --explain, each page's slowest queries are run again under EXPLAIN (ANALYZE, BUFFERS), after the
`SET LOCAL` settings the page ran them with (`selectors.trace_page`'s cpu_index_tuple_cost): the
execution time Postgres reports and the pages it touched, figures less sensitive to the machine's
load than the wall time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from _benchdb import copy_rows, drop_indexes, rebuild_indexes, recreate_database, use_database

DB = "tracerelay_bench_dashboard"

MODELS = [
    ("gpt-4o-mini", "openai", 35),
    ("gpt-4o", "openai", 15),
    ("claude-sonnet-4", "anthropic", 15),
    ("claude-3-5-haiku", "anthropic", 10),
    ("gemini-2.5-flash", "google", 10),
    ("gpt-4.1", "openai", 5),
    ("o3-mini", "openai", 4),
    ("llama-3.1-70b", "groq", 3),
    ("mistral-large", "mistral", 2),
    ("text-embedding-3-small", "openai", 1),
]
TAGS = [f"tag-{i:02d}" for i in range(25)]
# destination as rules name it (the platform) → the team's integration it resolves to
DESTINATIONS = {"langfuse": "langfuse-prod", "datadog": "datadog-llmobs", "helicone": "helicone-main",
                "webhook": "orders-hook"}  # fmt: skip
COLUMNS = (
    "id, team_id, trace_id, source, model, provider, prompt_tokens, completion_tokens, total_tokens, latency_ms, "
    "timestamp, received_at, status, error_type, error_message, input, output, tags, metadata, environment, "
    "service_name, session_id, user_id, cost, client_cost, unpriced, usage_estimated, price_source, price_version, "
    "destinations, routing"
)
DELIVERY_COLUMNS = (
    "team_id, trace_id, destination, integration_id, spec, rule_name, status, attempts, next_attempt_at, "
    "delivered_at, last_error, last_status_code, replay_count, created_at, updated_at"
)
BATCH = 20_000


def traces(team_id: int, total: int, now: datetime, rng: random.Random) -> Iterator[tuple[Any, ...]]:
    """The trace rows, oldest first, in COPY order."""
    from psycopg.types.json import Jsonb

    names = [m[:2] for m in MODELS]
    weights = [m[2] for m in MODELS]
    start = now - timedelta(days=7)
    step = (now - start).total_seconds() / total
    session, left = "", 0
    for i in range(total):
        model, provider = rng.choices(names, weights)[0]
        status = rng.choices(["success", "error", "rate_limited"], [94, 4, 2])[0]
        when = start + timedelta(seconds=i * step + rng.random() * step)
        if left == 0:
            session, left = f"sess-{uuid.uuid4().hex[:12]}", rng.randint(1, 15)
        left -= 1
        prompt, completion = int(rng.lognormvariate(6.5, 1)), int(rng.lognormvariate(5, 1))
        unpriced = provider == "groq"
        cost = None if unpriced else Decimal(prompt * 2 + completion * 8) / 1_000_000
        dests = rng.sample(list(DESTINATIONS), rng.choice((1, 1, 2)))
        routing = [{"destination": d, "rule": "r1", "kept": True, "rate": 1.0, "reason": "matched"} for d in dests]
        yield (
            uuid.uuid4(), team_id, f"trc_{uuid.uuid4().hex}", "api", model, provider, prompt, completion,
            prompt + completion, int(rng.lognormvariate(6.8, 0.6)), when, when, status,
            "" if status == "success" else "APIError", "" if status == "success" else "upstream said no",
            Jsonb([{"role": "user", "content": "Summarise this text. " * rng.randint(1, 40)}]),
            Jsonb({"role": "assistant", "content": "A summary. " * rng.randint(1, 30)}),
            Jsonb(list(dict.fromkeys(rng.choices(TAGS, k=rng.choice((0, 1, 2, 3)))))),
            Jsonb({"plan": rng.choice(("free", "pro", "team")), "region": rng.choice(("eu", "us"))}),
            rng.choices(["production", "development", "ci"], [85, 12, 3])[0], "api", session,
            f"user-{int(rng.paretovariate(1.2)) % 2000}", cost, None, unpriced, False,
            "" if unpriced else "genai-prices", "" if unpriced else "0.0.30", Jsonb(dests), Jsonb(routing),
        )  # fmt: skip


def deliveries(
    row: tuple[Any, ...], integrations: dict[str, int], now: datetime, rng: random.Random
) -> Iterator[tuple[Any, ...]]:
    """The outbox rows of one trace row: one per routed destination."""
    from psycopg.types.json import Jsonb

    trace_pk, team_id, when = row[0], row[1], row[10]
    for destination in row[29].obj:
        recent = now - when < timedelta(minutes=10)
        status = "pending" if recent else rng.choices(["delivered", "dead", "failed", "pending"], [96, 1.5, 1, 1.5])[0]
        done = when + timedelta(seconds=1)
        error = {"dead": "HTTP 401: invalid API key", "failed": "HTTP 400: span refused"}.get(status, "")
        yield (
            team_id, trace_pk, destination, None if recent else integrations[destination], Jsonb({"name": destination}),
            "r1", status, 0 if recent else 1, done, done if status == "delivered" else None, error,
            {"dead": 401, "failed": 400}.get(status), 0, when, done,
        )  # fmt: skip


def load(team_id: int, total: int, now: datetime, rng: random.Random) -> None:
    """COPY the team's traces and deliveries in batches, with the rollup deltas of each batch."""
    from django.db import transaction

    from accounts.models import Team
    from analytics import rollups
    from integrations.models import Integration

    team = Team.objects.get(pk=team_id)
    integrations = {
        platform: Integration.objects.create(team=team, name=name, platform=platform, config={}).pk
        for platform, name in DESTINATIONS.items()
    }
    rows = traces(team_id, total, now, rng)
    while batch := [r for _, r in zip(range(BATCH), rows, strict=False)]:
        copy_rows("traces_trace", COLUMNS, batch)
        outbox = (d for r in batch for d in deliveries(r, integrations, now, rng))
        copy_rows("routing_delivery", DELIVERY_COLUMNS, outbox)
        deltas = rollups.build_deltas(_as_columns(r) for r in batch)
        with transaction.atomic():
            rollups.add_deltas(deltas)


def _as_columns(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """What `rollups.build_deltas` reads of a trace (`rollups.TRACE_COLUMNS`), from its COPY row; the
    usage parts after those (`traces.usage`) are 0 here, as the COPY leaves them."""
    from analytics.rollups import TRACE_COLUMNS

    read = (
        row[1], row[10], row[4], row[5], row[12], row[19], row[20], row[17].obj, row[6], row[7], row[8], row[23],
        row[25], row[26], row[9], None,
    )  # fmt: skip
    return read + (0,) * (len(TRACE_COLUMNS) - len(read))


def pages(team_id: int, runs: int) -> dict[str, Any]:
    from django.http import QueryDict

    from integrations.models import Integration
    from traces.filters import parse_trace_filter
    from traces.models import Trace
    from traces.selectors import encode_cursor, trace_page

    newest = Trace.objects.filter(team_id=team_id).order_by("-timestamp", "-id").first()
    assert newest is not None
    tenth = Trace.objects.filter(team_id=team_id).order_by("-timestamp", "-id")[10]
    ids = list(Trace.objects.filter(team_id=team_id).order_by("?").values_list("trace_id", flat=True)[:runs])
    hook = Integration.objects.get(team_id=team_id, name=DESTINATIONS["webhook"])
    filtered = "model=gpt-4o&status=error&tag=tag-03&time_range=7d"
    fifth: str | None = None
    for _ in range(4):
        _, fifth = trace_page(
            team_id=team_id, trace_filter=parse_trace_filter(QueryDict(filtered)), limit=50, cursor=fifth
        )
    assert fifth is not None, "the filtered feed has fewer than five pages"
    return {
        "feed (first page)": lambda _: "/traces",
        "filtered": lambda _: f"/traces?{filtered}",
        "filtered (page 5)": lambda _: f"/traces?{filtered}&{urlencode({'cursor': fifth})}",
        "live poll (nothing new)": lambda _: f"/traces/live?after={encode_cursor(newest)}",
        "live poll (10 new)": lambda _: f"/traces/live?after={encode_cursor(tenth)}",
        "trace detail": lambda i: f"/traces/{ids[i % len(ids)]}",
        "sessions (24 h)": lambda _: "/sessions",
        "users (24 h)": lambda _: "/users",
        "analytics (24 h)": lambda _: "/analytics",
        "integrations": lambda _: "/integrations",
        "integration detail": lambda _: f"/integrations/{hook.pk}",
    }


def measure(team_id: int, runs: int, only: list[str]) -> None:
    from django.test import Client

    from accounts.models import Membership

    owner = Membership.objects.select_related("user").get(team_id=team_id).user
    client = Client()
    client.force_login(owner)
    heading = f"{'page':<26}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'cpu p50':>9}"
    print(f"{heading}  ({runs} requests each, after 3 warm-ups; cpu: this process, ms)")
    for name, url_of in pages(team_id, runs).items():
        if only and not any(o in name for o in only):
            continue
        for i in range(3):
            assert client.get(url_of(i)).status_code == 200, name
        times, cpu = [], []
        for i in range(runs):
            t0, c0 = time.perf_counter(), time.process_time()
            response = client.get(url_of(i))
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            assert response.status_code == 200, (name, response.status_code)
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        print(f"{name:<26}{statistics.median(times):>9.1f}{p95:>9.1f}{times[-1]:>9.1f}{statistics.median(cpu):>9.1f}")


def explain(team_id: int, only: list[str], top: int = 2) -> None:
    """Per page: its queries' count, and the ``top`` slowest under EXPLAIN (ANALYZE, BUFFERS):
    Postgres's own execution time and the 8 kB pages it touched (less load-sensitive than wall time)."""
    from django.db import connection, transaction
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from accounts.models import Membership

    client = Client()
    client.force_login(Membership.objects.select_related("user").get(team_id=team_id).user)
    print(f"\n{'page':<26}{'queries':>8}  slowest SQL: EXPLAIN ANALYZE execution ms (buffers hit+read)")
    for name, url_of in pages(team_id, 3).items():
        if only and not any(o in name for o in only):
            continue
        client.get(url_of(0))
        with CaptureQueriesContext(connection) as captured:
            client.get(url_of(1))
        # each query with the SET LOCAL statements run right before it (in its transaction)
        pending: list[str] = []
        queries: list[tuple[float, str, list[str]]] = []
        for query in captured.captured_queries:
            sql = query["sql"].lstrip()
            if sql.upper().startswith("SET LOCAL"):
                pending.append(sql)
                continue
            queries.append((float(query["time"]), sql, pending))
            pending = []
        slowest = sorted(queries, key=lambda q: -q[0])[:top]
        figures = []
        for _, sql, settings in slowest:
            if not sql.upper().startswith("SELECT"):
                continue
            with transaction.atomic(), connection.cursor() as cursor:
                for setting in settings:
                    cursor.execute(setting)
                cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}")
                plan = cursor.fetchone()[0][0]
                pages_touched = plan["Plan"].get("Shared Hit Blocks", 0) + plan["Plan"].get("Shared Read Blocks", 0)
                figures.append(f"{plan['Execution Time']:.1f} ({pages_touched:,})")
        print(f"{name:<26}{len(captured.captured_queries):>8}  {', '.join(figures)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reuse", action="store_true", help="Measure what a previous run loaded.")
    parser.add_argument("--only", action="append", default=[], help="Measure the pages whose name has this.")
    parser.add_argument("--explain", action="store_true", help="Also EXPLAIN ANALYZE each page's slowest SQL.")
    parser.add_argument("--database", default=DB, help=f"The bench's own database (default {DB}).")
    args = parser.parse_args()
    use_database(args.database)
    rng = random.Random(args.seed)
    if not args.reuse:
        recreate_database()
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from accounts.models import Membership, Role, Team
    from analytics import snapshots

    if args.reuse:
        team = Team.objects.get(name="bench")
    else:
        started = time.perf_counter()
        now = datetime.now(UTC)
        team = Team.objects.create(name="bench")
        other = Team.objects.create(name="bench-other")
        user = get_user_model().objects.create_user(username="bench@example.com", password=uuid.uuid4().hex)
        Membership.objects.create(team=team, user=user, role=Role.OWNER)
        indexes = drop_indexes("traces_trace") + drop_indexes("routing_delivery")
        for t, n in ((team, args.traces), (other, args.traces // 10)):
            t0 = time.perf_counter()
            load(t.pk, n, now, rng)
            print(f"loaded {n:,} traces of team {t.name} (and their deliveries) in {time.perf_counter() - t0:.0f} s")
        snapshots.all_folded()  # (their deltas are added by `load`: none of these traces is pending)
        print(f"indexes rebuilt and analyzed in {rebuild_indexes(indexes):.0f} s")
        print(f"the whole load took {time.perf_counter() - started:.0f} s", flush=True)
    measure(team.pk, args.runs, args.only)
    if args.explain:
        explain(team.pk, args.only)


if __name__ == "__main__":
    sys.exit(main())
