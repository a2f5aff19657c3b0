"""Ingest cost of a setting, compared credibly on a shared machine: `bench/ingest.py --compare-pii`
and ``--compare-rollups``.

Each setting under comparison is a team of its own (same routing rules, same traces) in one
database. The variants run **side by side**: one uvicorn server per variant, all driven at the
same time with the same scenario and concurrency, so whatever else the machine does at that
moment weighs on each alike; a variant moves to the next server every round (no server is
favoured). Each window is a warm-up, then a measured run; around the measured run the bench reads
``/proc/<pid>/stat`` (user + system CPU) of each server's uvicorn processes and of the Postgres
backends it opened (``application_name`` ``bench-server-<n>``, from ``PGAPPNAME``).

The figure that matters is **CPU seconds per 1,000 traces** accepted: other people's load slows
the bench down but changes what a trace costs far less, and on a saturated machine throughput is
inversely proportional to it. Throughput is printed beside it, with the load average. The
summary gives per-variant medians over the rounds and, per scenario, the median of the per-round
ratios to the first variant with their range (a wide range: the rounds disagree; run it again
on a quieter machine).

``--compare-rollups`` compares a database as migrated with one without what the rollups cost
ingest: on Postgres that is the traces' ``rollup_xid`` column default and its index
(`analytics.snapshots`; ingest sends no statement of its own for them). The two variants are two
databases; every round each server is restarted on the next variant's database, so a variant still
moves to the next server every round. Analytics has no setting to switch rollups off.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingest import Result, Server, run

TICKS = os.sysconf("SC_CLK_TCK")
PII_MODES = ("off", "detect", "redact", "hash", "drop")
SCENARIOS = [(1, 32, False), (100, 4, False), (1000, 2, False), (1000, 2, True)]  # batch, concurrency, OTLP


@dataclass(frozen=True)
class Variant:
    label: str
    team: str
    pii: str | None  # the team's stored PII mode
    rollups: bool = True
    db_suffix: str | None = None  # a database of its own (the bench database's name + this)


@dataclass
class Window:
    round: int
    scenario: str
    variant: str
    result: Result
    server_cpu: float  # seconds, uvicorn master and workers
    db_cpu: float | None  # seconds, the server's database backends (None when /proc does not show them)
    load: float
    warm_accepted: int = 0

    @property
    def rate(self) -> float:
        """Traces/s over the whole window, requests at its edges included (no rounding to whole requests)."""
        return self.result.accepted / self.result.elapsed if self.result.elapsed else 0.0

    def per_1k(self, cpu: float | None) -> float | None:
        return None if cpu is None or not self.result.accepted else cpu / self.result.accepted * 1000


def variants(args: argparse.Namespace) -> list[Variant]:
    if args.compare_pii and args.compare_rollups:
        raise SystemExit("compare one thing at a time: --compare-pii or --compare-rollups")
    if args.compare_rollups:
        return [
            Variant("rollups", "bench-rollups", None, db_suffix=""),
            Variant("no-rollups", "bench-norollups", None, False, db_suffix="_norollups"),
        ]
    modes = [m.strip() for m in args.compare_pii.split(",") if m.strip()]
    unknown = [m for m in modes if m not in PII_MODES]
    if unknown or len(modes) < 2 or len(set(modes)) != len(modes):
        raise SystemExit(f"--compare-pii takes two or more different modes of {', '.join(PII_MODES)}")
    return [Variant(mode, f"bench-pii-{mode}", mode) for mode in modes]


# --- CPU accounting ----------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a live process (all its threads), from /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()  # after "pid (comm) ": state is field 3
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime: fields 14 and 15


def process_tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo.extend(int(child) for child in task.read_text().split())
            except OSError:
                pass
    return pids


class CpuMeter:
    """Snapshots of CPU seconds per process of one server: its uvicorn tree, and the database
    backends it opened (told apart by ``application_name``, from ``PGAPPNAME`` in its env)."""

    def __init__(self, server_pid: int, app_name: str, db: Any) -> None:
        self.server_pid = server_pid
        self.app_name = app_name
        self.db = db

    def _backends(self) -> list[int]:
        rows = self.db.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
            [self.app_name],
        ).fetchall()
        return [row[0] for row in rows]

    def snapshot(self) -> tuple[dict[int, float], dict[int, float]]:
        server = {pid: cpu for pid in process_tree(self.server_pid) if (cpu := cpu_seconds(pid)) is not None}
        db = {pid: cpu for pid in self._backends() if (cpu := cpu_seconds(pid)) is not None}
        return server, db

    @staticmethod
    def spent(before: dict[int, float], after: dict[int, float]) -> float:
        """CPU spent between two snapshots (a process that started in between counts whole; one
        that ended in between is lost: the pool keeps its connections, uvicorn its workers)."""
        return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def load_average() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


# --- The run -----------------------------------------------------------------------------------


def _name(batch: int, otlp: bool) -> str:
    return f"otlp {batch}" if otlp else "single POST" if batch == 1 else f"batch of {batch}"


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "    n/a" if value is None else format(value, spec)


def compare(args: argparse.Namespace) -> None:
    import psycopg

    chosen = variants(args)
    own_dbs = all(v.db_suffix is not None for v in chosen)
    servers = [
        Server(
            args.port + i,
            args.workers,
            db_name=args.db_name + (v.db_suffix or ""),
            env={"PGAPPNAME": f"bench-server-{i}"},
        )
        for i, v in enumerate(chosen)
    ]
    if own_dbs:
        keys = {}
        for server, v in zip(servers, chosen, strict=True):
            keys |= server.prepare({v.team: v.pii})
            if not v.rollups:
                _without_rollups(server.database_url)
    else:
        keys = servers[0].prepare({v.team: v.pii for v in chosen})
    databases = [server.database_url for server in servers]  # variant i's (own_dbs), else one
    db = psycopg.connect(databases[0].replace("postgres://", "postgresql://"), autocommit=True)
    started: list[Server] = []
    try:
        urls = []
        for server in servers:
            urls.append(server.start())
            started.append(server)
        meters = [CpuMeter(server.process.pid, f"bench-server-{i}", db) for i, server in enumerate(servers)]  # type: ignore[union-attr]

        def serve(round_no: int) -> None:
            """own_dbs: restart each server on the database of the variant it serves this round."""
            for i, server in enumerate(servers):
                wanted = databases[(i - round_no + 1) % len(servers)]
                if server.database_url != wanted:
                    server.stop()
                    server.database_url = server.env["DATABASE_URL"] = wanted
                    urls[i] = server.start()
                    meters[i] = CpuMeter(server.process.pid, f"bench-server-{i}", db)  # type: ignore[union-attr]

        windows = _rounds(args, chosen, keys, urls, meters, on_round=serve if own_dbs else None)
        counted = [_stored(url) for url in (databases if own_dbs else databases[:1])]
        traces, deliveries = sum(c[0] for c in counted), sum(c[1] for c in counted)
        accepted = sum(w.result.accepted + w.warm_accepted for w in windows)
        print(f"stored: {traces:,} traces, {deliveries:,} outbox rows (accepted, warm-ups included: {accepted:,})")
        if traces != accepted:
            print("WARNING: stored and accepted counts differ: the figures are not comparable")
    finally:
        db.close()
        for server in started:
            server.stop()
    summarise(windows, chosen, [s for s in SCENARIOS if not args.only_otlp or s[0] == 1000])


def _stored(database_url: str) -> tuple[int, int]:
    """Traces and outbox rows in a database."""
    import psycopg

    with psycopg.connect(database_url.replace("postgres://", "postgresql://")) as conn:
        row = conn.execute("SELECT (SELECT count(*) FROM traces_trace), (SELECT count(*) FROM routing_delivery)")
        traces, deliveries = row.fetchone() or (0, 0)
    return traces, deliveries


def _without_rollups(database_url: str) -> None:
    """What the schema would be without rollups: no default for the traces' ``rollup_xid`` (it
    stays null) and no index on it (`analytics` migration 0005)."""
    import psycopg

    with psycopg.connect(database_url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
        conn.execute("ALTER TABLE traces_trace ALTER COLUMN rollup_xid DROP DEFAULT")
        conn.execute("DROP INDEX trace_rollup_xid")


def _rounds(
    args: argparse.Namespace,
    chosen: list[Variant],
    keys: dict[str, str],
    urls: list[str],
    meters: list[CpuMeter],
    *,
    on_round: Any = None,
) -> list[Window]:
    """Every round, every scenario: all variants at the same time, each on its own server (a
    variant moves to the next server every round: ``on_round(round_no)`` first, when the servers
    must be set up for it), so whatever else the machine does at that moment weighs on each alike."""
    scenarios = [s for s in SCENARIOS if not args.only_otlp or s[0] == 1000]
    print(
        f"tracerelay ingest comparison: {', '.join(v.label for v in chosen)}, side by side on {len(urls)} servers"
        f" ({args.workers} uvicorn workers each), {os.cpu_count()} cores; {args.rounds} rounds of"
        f" {len(scenarios)} scenarios, {args.warmup:g} s warm-up + {args.seconds:g} s measured;"
        f" load average {load_average():.2f}",
        flush=True,
    )
    windows: list[Window] = []
    for round_no in range(1, args.rounds + 1):
        if on_round is not None:
            on_round(round_no)
        for batch, concurrency, otlp in scenarios:
            placed = [(v, (i + round_no - 1) % len(urls)) for i, v in enumerate(chosen)]

            jobs = [(urls[s], keys[v.team], batch, concurrency, otlp) for v, s in placed]
            warm = asyncio.run(_together(jobs, args.warmup))
            before = [meter.snapshot() for meter in meters]
            results = asyncio.run(_together(jobs, args.seconds))
            after = [meter.snapshot() for meter in meters]
            load = load_average()
            for (variant, s), result, warmed in zip(placed, results, warm, strict=True):
                window = Window(
                    round_no,
                    _name(batch, otlp),
                    variant.label,
                    result,
                    CpuMeter.spent(before[s][0], after[s][0]),
                    CpuMeter.spent(before[s][1], after[s][1]) if after[s][1] else None,
                    load,
                    warmed.accepted,
                )
                windows.append(window)
                print(
                    f"r{round_no} {window.scenario:<14} {variant.label:<10} server {s}  {window.rate:>8,.0f} traces/s"
                    f"  server {_fmt(window.per_1k(window.server_cpu))} CPU-s/1k"
                    f"  db {_fmt(window.per_1k(window.db_cpu))} CPU-s/1k"
                    f"  load {load:.2f}" + (f"  ERRORS {result.errors}" if result.errors else ""),
                    flush=True,
                )
    return windows


async def _together(jobs: list[tuple[str, str, int, int, bool]], seconds: float) -> list[Result]:
    return list(
        await asyncio.gather(*(run(url, key, batch, c, seconds, 0.0, otlp) for url, key, batch, c, otlp in jobs))
    )


def summarise(windows: list[Window], chosen: list[Variant], scenarios: list[tuple[int, int, bool]]) -> None:
    by: dict[tuple[str, str], list[Window]] = defaultdict(list)
    for w in windows:
        by[(w.scenario, w.variant)].append(w)
    base = chosen[0].label
    print(
        f"\nmedians over {max(w.round for w in windows)} rounds (load average {min(w.load for w in windows):.2f}"
        f"-{max(w.load for w in windows):.2f}); change = median of per-round ratios to {base} [min, max]"
    )
    print(f"{'scenario':<14} {'variant':<10} {'traces/s':>9} {'server CPU-s/1k':>16} {'db CPU-s/1k':>12}  change")
    for batch, _, otlp in scenarios:
        scenario = _name(batch, otlp)
        for variant in chosen:
            group = by[(scenario, variant.label)]
            rate = statistics.median(w.rate for w in group)
            server = statistics.median(w.per_1k(w.server_cpu) or 0.0 for w in group)
            dbs = [x for w in group if (x := w.per_1k(w.db_cpu)) is not None]
            db = statistics.median(dbs) if dbs else None
            change = ""
            if variant.label != base:
                change = "  " + "; ".join(
                    f"{what} {_change(by[(scenario, base)], group, pick)}"
                    for what, pick in (("server CPU", _server), ("server+db CPU", _total), ("traces/s", _rate))
                )
            print(f"{scenario:<14} {variant.label:<10} {rate:>9,.0f} {server:>16.3f} {_fmt(db):>12}{change}")


def _server(w: Window) -> float | None:
    return w.per_1k(w.server_cpu)


def _total(w: Window) -> float | None:
    return None if w.db_cpu is None else w.per_1k(w.server_cpu + w.db_cpu)


def _rate(w: Window) -> float | None:
    return w.rate


def _change(base: list[Window], other: list[Window], pick: Any) -> str:
    ratios = []
    for b in base:
        o = next((w for w in other if w.round == b.round), None)
        x, y = pick(b), pick(o) if o else None
        if x and y is not None:
            ratios.append(y / x - 1)
    if not ratios:
        return "n/a"
    return f"{statistics.median(ratios):+.1%} [{min(ratios):+.1%}, {max(ratios):+.1%}]"
