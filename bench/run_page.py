"""The run page (`/runs/<run_id>`) in Chromium: first paint and time to interactive at 10,000 spans,
beside a run of 100 (the baseline of the same run), and how smoothly the tree scrolls.

    .venv/bin/python bench/run_page.py                     # runs of 100 and 10,000 spans, 10 loads each
    .venv/bin/python bench/run_page.py --spans 100,10000,50000 --loads 20
    .venv/bin/python bench/run_page.py --reuse             # the runs a previous call stored

Makes its own Postgres database `tracerelay_bench_run_page` (DATABASE_URL's server; `_benchdb`), a team
and a signed-in owner, and one run per size shaped like an agent's: a root agent, steps of chains,
each with chat calls and tools nesting a few levels deep (a 1 in 300 failing), with prompts and
replies. The server is the one `bin/run` starts (`uvicorn config.asgi:application` with uvloop and
httptools, DEBUG off) in a process of its own; the browser is Playwright's headless Chromium
(/usr/bin/chromium). Each load is a fresh browser context (nothing cached; then, on the line
"warm", as many loads in one context: a returning visitor, the stylesheet and scripts in its cache),
and reads the page's own performance entries:

- first paint: `first-contentful-paint` (the header and totals, rendered by the server);
- interactive: the page's mark `run-tree:interactive` (static/dashboard/runtree.js), set once the
  spans are loaded, the tree built and rolled up and the rows on screen drawn with their handlers:
  from then on a click, a key or the search answers;
- spans.json: the one request for every span (time from request to last byte, and its size);
- server CPU: the web process's CPU time per load (/proc), and its CPU for the spans.json alone is in
  `bench/runs.py`'s API figures.

Then, in one load per size with every subtree opened (all N rows in the list), the tree is scrolled
top to bottom in 120 jumps, one per animation frame (every row on screen new at each frame: the
worst case), and then 120 frames of 100 px each (a mouse wheel or a flick: a few new rows a frame):
the frame times (p50, p95, max) say whether it scrolls smoothly (16.7 ms is 60 frames a second).
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _benchdb import ROOT, use_database

DB = "tracerelay_bench_run_page"
CHROMIUM = "/usr/bin/chromium"
FAILED = {"status": "error", "error_type": "TimeoutError", "error_message": "the tool timed out"}

_MEASURE = """() => {
  const mark = performance.getEntriesByName("run-tree:interactive")[0];
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  const all = performance.getEntriesByType("resource").filter((r) => r.name.includes("/spans.json"));
  const spans = all[0];
  return {
    first_paint: paint ? paint.startTime : null,
    interactive: mark ? mark.startTime : null,
    spans_ms: spans ? spans.responseEnd - spans.requestStart : null,
    spans_bytes: spans ? spans.encodedBodySize : null,
    spans_requests: all.length,
  };
}"""

_SCROLL = """async (wheel) => {
  const view = document.querySelector(".rt-viewport");
  const steps = 120, frames = [];
  const total = view.scrollHeight - view.clientHeight;
  let last = performance.now();
  for (let i = 1; i <= steps; i++) {
    view.scrollTop = wheel ? i * 100 : (total * i) / steps;
    await new Promise((resolve) => requestAnimationFrame(resolve));
    const now = performance.now();
    frames.push(now - last);
    last = now;
  }
  return { frames, rows: document.querySelectorAll(".rt-row:not([hidden])").length, height: view.scrollHeight };
}"""


def spans_of(run_id: str, count: int, start: datetime) -> list[dict[str, Any]]:
    """An agent's run of ``count`` spans: a root, steps of 100 spans, chat calls and tools below."""
    chat_in = [
        {"role": "system", "content": "You are a research assistant."},
        {"role": "user", "content": "Summarise the findings on topic 42 in three sentences."},
    ]
    chat_out = {"choices": [{"message": {"role": "assistant", "content": "The findings are " + "x" * 200}}]}
    spans = [{"id": "s0", "parent": "", "kind": "agent", "name": "research_agent", "offset": 0, "ms": count * 3}]
    n = 1
    while n < count:
        step = f"s{n}"
        spans.append({"id": step, "parent": "s0", "kind": "chain", "name": f"step {n}", "offset": n * 3, "ms": 280})
        n += 1
        parent = step
        for depth in range(99):
            if n >= count:
                break
            kind = "llm" if depth % 3 == 0 else "tool"
            spans.append({"id": f"s{n}", "parent": parent, "kind": kind, "name": f"{kind} {n}", "offset": n * 3,
                          "ms": 2 + depth % 7, "failed": n % 300 == 0})  # fmt: skip
            if depth % 25 == 24:
                parent = f"s{n}"
            n += 1
    for s in spans:
        s["input"], s["output"] = (chat_in, chat_out) if s["kind"] == "llm" else ({"q": s["name"]}, {"ok": True})
    return spans


def store_run(team_id: int, run_id: str, count: int) -> None:
    from decimal import Decimal

    from traces.models import Trace
    from traces.runs.summary import rebuild

    Trace.objects.filter(team_id=team_id, run_id=run_id).delete()
    start = datetime.now(UTC) - timedelta(minutes=10)
    rows = []
    for s in spans_of(run_id, count, start):
        call = s["kind"] == "llm"
        rows.append(
            Trace(
                team_id=team_id,
                trace_id=f"{run_id}-{s['id']}",
                run_id=run_id,
                parent_id=f"{run_id}-{s['parent']}" if s["parent"] else "",
                kind=s["kind"],
                name=s["name"],
                model="gpt-4o-mini" if call else "",
                provider="openai" if call else "",
                prompt_tokens=420 if call else 0,
                completion_tokens=60 if call else 0,
                total_tokens=480 if call else 0,
                cost=Decimal("0.000099") if call else None,
                timestamp=start + timedelta(milliseconds=s["offset"]),
                latency_ms=s["ms"],
                input=s["input"],
                output=s["output"],
                **(FAILED if s.get("failed") else {}),
            )  # fmt: skip
        )
    Trace.objects.bulk_create(rows, batch_size=2000)
    rebuild(team_id, [run_id])  # its summary row, which ingest keeps


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1,localhost"}
    command = [sys.executable, "-m", "uvicorn", "config.asgi:application", "--loop", "uvloop", "--http", "httptools"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--no-access-log"]
    server = subprocess.Popen(command, cwd=ROOT, env=env)
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
            return server
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise SystemExit("the server did not start")
            time.sleep(0.2)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(base_url: str, cookie: dict[str, str], server_pid: int, sizes: list[int], loads: int) -> None:
    from playwright.sync_api import sync_playwright

    args = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args, headless=True)

        def open_run(run_id: str, context: Any = None) -> Any:
            if context is None:
                context = browser.new_context(base_url=base_url, viewport={"width": 1280, "height": 900})
                context.add_cookies([{"name": cookie["name"], "value": cookie["value"], "url": base_url}])
            page = context.new_page()
            response = page.goto(f"/runs/{run_id}")
            try:
                page.wait_for_selector("#run-tree[data-ready]", state="attached", timeout=60_000)
            except Exception:
                status = response.status if response else None
                state = page.evaluate("() => [location.href, document.title, document.readyState, "
                                      "(document.getElementById('run-tree') || {}).outerHTML]")  # fmt: skip
                raise SystemExit(f"the page did not become interactive: HTTP {status}, {state}")
            return context, page

        head = f"{'spans':>7} {'loads':>5} | {'first paint p50/p95':>19} | {'interactive p50/p95':>19} | "
        print(head + f"{'spans.json p50 ms':>17} {'MB':>5} | {'server CPU/load':>15} | scroll frames p50/p95/max ms")
        for size in sizes:
            run_id = f"bench-run-{size}"
            context, _ = open_run(run_id)  # warm the server (its first request of the kind)
            context.close()
            results = []
            cpu = []
            for _ in range(loads):
                before = cpu_seconds(server_pid)
                context, page = open_run(run_id)
                results.append(page.evaluate(_MEASURE))
                cpu.append(cpu_seconds(server_pid) - before)
                context.close()
            # A returning visitor: one browser context, its cache holding the stylesheet and scripts.
            warm = []
            context, page = open_run(run_id)
            for _ in range(loads):
                page.close()
                context, page = open_run(run_id, context)
                warm.append(page.evaluate(_MEASURE))
            context.close()
            context, page = open_run(run_id)
            page.get_by_role("button", name="Expand all").click()
            scroll = page.evaluate(_SCROLL, False)
            wheel = page.evaluate(_SCROLL, True)["frames"]
            context.close()
            paint = [r["first_paint"] for r in results if r["first_paint"] is not None]
            ready = [r["interactive"] for r in results]
            warm_paint = [r["first_paint"] for r in warm if r["first_paint"] is not None]
            warm_ready = [r["interactive"] for r in warm]
            fetch = [r["spans_ms"] for r in results if r["spans_ms"] is not None]
            size_mb = (results[0]["spans_bytes"] or 0) / 1e6
            requests = {r["spans_requests"] for r in results}
            if requests != {1}:
                print(f"the spans were requested {requests} times per load: the preload was not used")
            frames = scroll["frames"]
            print(
                f"{size:>7,} {loads:>5} | {pct(paint, 0.5):>8.0f} / {pct(paint, 0.95):>6.0f} ms | "
                f"{pct(ready, 0.5):>8.0f} / {pct(ready, 0.95):>6.0f} ms | {statistics.median(fetch):>17.0f} "
                f"{size_mb:>5.1f} | {statistics.median(cpu) * 1000:>12.0f} ms | "
                f"{pct(frames, 0.5):.1f} / {pct(frames, 0.95):.1f} / {max(frames):.1f} "
                f"({scroll['rows']} rows in the DOM of {scroll['height'] // 32:,}); "
                f"wheel {pct(wheel, 0.5):.1f} / {pct(wheel, 0.95):.1f} / {max(wheel):.1f}",
                flush=True,
            )
            print(
                f"{'':>7} {'warm':>5} | {pct(warm_paint, 0.5):>8.0f} / {pct(warm_paint, 0.95):>6.0f} ms | "
                f"{pct(warm_ready, 0.5):>8.0f} / {pct(warm_ready, 0.95):>6.0f} ms | (the same browser, its cache warm)",
                flush=True,
            )
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", default="100,10000", help="Run sizes, comma-separated (default 100,10000).")
    parser.add_argument("--loads", type=int, default=10, help="Page loads per size (default 10).")
    parser.add_argument("--reuse", action="store_true", help="Measure the runs a previous call stored.")
    parser.add_argument("--database", default=DB, help=f"The bench's own database (default {DB}).")
    args = parser.parse_args()
    sizes = [int(s) for s in args.spans.split(",")]
    use_database(args.database)
    from _benchdb import recreate_database

    if not args.reuse:
        recreate_database()
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from accounts.models import Membership, Role, Team

    team, created = Team.objects.get_or_create(name="bench")
    user = get_user_model().objects.filter(username="bench@example.com").first()
    if user is None:
        user = get_user_model().objects.create_user(username="bench@example.com", password=uuid.uuid4().hex)
        Membership.objects.create(team=team, user=user, role=Role.OWNER)
    for size in sizes:
        run_id = f"bench-run-{size}"
        from traces.models import Trace

        if not args.reuse or not Trace.objects.filter(team=team, run_id=run_id).exists():
            t0 = time.perf_counter()
            store_run(team.pk, run_id, size)
            print(f"stored a run of {size:,} spans in {time.perf_counter() - t0:.1f} s", flush=True)
    client = Client()
    client.force_login(user)
    session = client.cookies[settings.SESSION_COOKIE_NAME]
    port = _free_port()
    server = start_server(port)
    try:
        cookie = {"name": session.key, "value": session.value}
        measure(f"http://127.0.0.1:{port}", cookie, server.pid, sizes, args.loads)
    finally:
        server.terminate()
        server.wait(15)


if __name__ == "__main__":
    main()
