"""Dashboard page latency with a real backlog: p50/p95 server time of the trace feed's pages.

    .venv/bin/python bench/dashboard.py                    # 1M traces, 50 requests per page
    .venv/bin/python bench/dashboard.py --traces 200000 --runs 30
    .venv/bin/python bench/dashboard.py --reuse            # measure what a previous run loaded

Makes its own Postgres database `tracerelay_bench_dashboard` (DATABASE_URL's server), migrates it
and loads N traces of one team over the last 7 days with COPY (10 models, 94% success, 0-3 of 25
tags, metadata, 2,000 users, sessions of ~8 calls, one or two destinations, routing decisions,
prompts and replies), then ANALYZE. A second team gets a tenth as many, so the team filter matters.

Each page is requested through Django's test client (the whole stack: middleware, session, the
`team_view` check, the selectors, the template), signed in as the team's owner; the time is the
wall time of `client.get` in this process:

- feed: `/traces`, the first page (50 rows)
- filtered: `/traces?model=gpt-4o&status=error&tag=tag-03&time_range=7d`
- live: `/traces/live?after=<the newest row's cursor>`, the 2 s poll (nothing new, as most polls)
- live+10: the poll with 10 newer rows to send
- detail: `/traces/<id>` of a random trace
- sessions: `/sessions` (the last 24 hours)
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DB = "tracerelay_bench_dashboard"
BASE_URL = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tracerelay").rsplit("/", 1)[0]
os.environ.update(
    {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"{BASE_URL}/{DB}",
        "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9"),
        "TRACERELAY_DATA_DIR": "/tmp/tracerelay-bench-data",
        "LOG_LEVEL": "WARNING",
    }
)

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
DESTINATIONS = ["langfuse", "datadog", "helicone", "webhook"]
COLUMNS = (
    "id, team_id, trace_id, source, model, provider, prompt_tokens, completion_tokens, total_tokens, latency_ms, "
    "timestamp, received_at, status, error_type, error_message, input, output, tags, metadata, environment, "
    "service_name, session_id, user_id, cost, client_cost, unpriced, usage_estimated, price_source, price_version, "
    "destinations, routing"
)


def prepare() -> None:
    import psycopg

    with psycopg.connect(f"{BASE_URL}/postgres".replace("postgres://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB}")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, check=True)


def load(team_id: int, total: int, now: datetime, rng: random.Random) -> None:
    from django.db import connection
    from psycopg.types.json import Jsonb

    names = [m[:2] for m in MODELS]
    weights = [m[2] for m in MODELS]
    start = now - timedelta(days=7)
    step = (now - start).total_seconds() / total
    session, left = "", 0
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY traces_trace ({COLUMNS}) FROM STDIN") as copy:
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
            dests = rng.sample(DESTINATIONS, rng.choice((1, 1, 2)))
            routing = [{"destination": d, "rule": "r1", "kept": True, "rate": 1.0, "reason": "matched"} for d in dests]
            copy.write_row(
                (
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
                )
            )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE traces_trace")


def measure(team_id: int, runs: int, rng: random.Random) -> None:
    from django.test import Client

    from accounts.models import Membership
    from traces.models import Trace
    from traces.selectors import encode_cursor

    owner = Membership.objects.select_related("user").get(team_id=team_id).user
    client = Client()
    client.force_login(owner)
    newest = Trace.objects.filter(team_id=team_id).order_by("-timestamp", "-id").first()
    assert newest is not None
    tenth = Trace.objects.filter(team_id=team_id).order_by("-timestamp", "-id")[10]
    ids = list(Trace.objects.filter(team_id=team_id).order_by("?").values_list("trace_id", flat=True)[:runs])
    pages: dict[str, Any] = {
        "feed (first page)": lambda _: "/traces",
        "filtered": lambda _: "/traces?model=gpt-4o&status=error&tag=tag-03&time_range=7d",
        "live poll (nothing new)": lambda _: f"/traces/live?after={encode_cursor(newest)}",
        "live poll (10 new)": lambda _: f"/traces/live?after={encode_cursor(tenth)}",
        "trace detail": lambda i: f"/traces/{ids[i % len(ids)]}",
        "sessions (24 h)": lambda _: "/sessions",
    }
    print(f"{'page':<26}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}  ({runs} requests each, after 3 warm-ups)")
    for name, url_of in pages.items():
        for i in range(3):
            assert client.get(url_of(i)).status_code == 200, name
        times = []
        for i in range(runs):
            t0 = time.perf_counter()
            response = client.get(url_of(i))
            times.append((time.perf_counter() - t0) * 1000)
            assert response.status_code == 200, (name, response.status_code)
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        print(f"{name:<26}{statistics.median(times):>9.1f}{p95:>9.1f}{times[-1]:>9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reuse", action="store_true", help="Measure what a previous run loaded.")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    if not args.reuse:
        prepare()
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from accounts.models import Membership, Role, Team

    User = get_user_model()

    if args.reuse:
        team = Team.objects.get(name="bench")
    else:
        now = datetime.now(UTC)
        team = Team.objects.create(name="bench")
        other = Team.objects.create(name="bench-other")
        user = User.objects.create_user(username="bench@example.com", password=uuid.uuid4().hex)
        Membership.objects.create(team=team, user=user, role=Role.OWNER)
        for t, n in ((team, args.traces), (other, args.traces // 10)):
            t0 = time.perf_counter()
            load(t.pk, n, now, rng)
            print(f"loaded {n:,} traces of team {t.name} in {time.perf_counter() - t0:.0f} s", flush=True)
    measure(team.pk, args.runs, rng)


if __name__ == "__main__":
    main()
