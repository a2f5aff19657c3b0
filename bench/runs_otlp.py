"""OTLP ingest of one agent run of 10,000 spans (issue 22), beside the same count of plain per-call spans.

    .venv/bin/python bench/runs_otlp.py                   # starts its own server on Postgres + Redis
    .venv/bin/python bench/runs_otlp.py --spans 10000 --rounds 3

Two ways in, alternated round by round on one server (a fresh database, `bench/ingest.py`'s `Server`:
config.asgi under uvicorn as bin/run serves it, a routing rule sending everything to a webhook, so every
span gets its Delivery row in the same transaction):

- `run`: one OpenTelemetry trace of N spans, as an agent framework's instrumentation exports it: an
  `invoke_agent` root, steps (`chain`) each with a retrieval and its embedding call, a tool and its chat
  call, a chat call of the step's own and a guardrail; ~40 % of the spans are calls. Exported as an
  SDK's `BatchSpanProcessor` does (512 spans a request, in the order the spans end: children before
  their parents, the root in the last request);
- `per call`: N GenAI chat spans, each a trace of its own (what OTLP stored before runs: one call, one
  trace), the same batches.

Each round sends new ids (a resent span is deduplicated, which would flatter the figure). Printed per
way: wall seconds from the first request to the last answer, server CPU seconds (the uvicorn processes
and their Postgres backends, from /proc), and both per span; medians of the rounds. At the end the
stored rows are counted: every span sent must be there.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import Server  # noqa: E402
from ingest_compare import CpuMeter, load_average  # noqa: E402

BATCH = 512  # OpenTelemetry SDKs' BatchSpanProcessor: max_export_batch_size
APP_NAME = "bench-runs-otlp"


def _kv(key: str, value: Any) -> Any:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _messages(role: str, text: str) -> str:
    return orjson.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}]).decode()


def _chat(i: int, model: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai" if model.startswith("gpt") else "anthropic",
        "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": 120 + i % 50,
        "gen_ai.usage.output_tokens": 40 + i % 20,
        "gen_ai.input.messages": _messages("user", f"Step {i}: what should the agent do next for order {i}?"),
        "gen_ai.output.messages": _messages("assistant", f"Look the order up, then answer (step {i})."),
    }


class Run:
    """The spans of one run, as (span id, parent span id, name, attributes, start ns, duration ms), in
    the order they end (children first)."""

    def __init__(self, size: int) -> None:
        self.spans: list[tuple[int, int, str, dict[str, Any], int, int]] = []
        start = time.time_ns()
        root = 1
        next_id = 2
        step = 0
        while next_id <= size:  # each step: up to 7 spans below the root (span ids 1..size)
            s, retrieval, embed, tool, tool_chat, chat, guard = range(next_id, next_id + 7)
            next_id += 7
            at = start + step * 3_000_000_000
            ending = [
                (embed, retrieval, "embeddings text-embedding-3-small",
                 {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "text-embedding-3-small",
                  "gen_ai.usage.input_tokens": 12}, at + 5_000_000, 80),
                (retrieval, s, "retrieve orders", {"openinference.span.kind": "RETRIEVER",
                 "input.value": f"order {step}"}, at, 150),
                (tool_chat, tool, "chat claude-3-5-haiku-20241022", _chat(step, "claude-3-5-haiku-20241022"),
                 at + 200_000_000, 900),
                (tool, s, "execute_tool lookup_order", {"gen_ai.operation.name": "execute_tool",
                 "gen_ai.tool.name": "lookup_order", "gen_ai.tool.call.arguments": f'{{"order": {step}}}',
                 "gen_ai.tool.call.result": '{"status": "shipped"}'}, at + 160_000_000, 1000),
                (chat, s, "chat gpt-4o-mini", _chat(step, "gpt-4o-mini"), at + 1_200_000_000, 1100),
                (guard, s, "moderation", {"openinference.span.kind": "GUARDRAIL"}, at + 2_400_000_000, 60),
                (s, root, f"step {step}", {"traceloop.span.kind": "task"}, at, 2500),
            ]  # fmt: skip
            self.spans.extend(e for e in ending if e[0] <= size)
            step += 1
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
                 "gen_ai.request.model": "gpt-4o-mini"}  # fmt: skip
        self.spans.append((root, 0, "invoke_agent support", agent, start, step * 3000))

    def bodies(self, *, as_run: bool) -> list[bytes]:
        """The export requests, new ids: one trace id for the run, or one per span (`per call`: every
        span a GenAI chat call of its own)."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

        run_id = random.randbytes(16)
        salt = random.getrandbits(40) << 20
        out = []
        resource = {"attributes": [_kv("service.name", "bench"), _kv("deployment.environment.name", "production")]}
        for first in range(0, len(self.spans), BATCH):
            spans = []
            for n, (sid, parent, name, attrs, start, ms) in enumerate(self.spans[first : first + BATCH], first):
                if not as_run:
                    name, attrs, parent = "chat gpt-4o-mini", _chat(n, "gpt-4o-mini"), 0
                spans.append(
                    Span(
                        trace_id=run_id if as_run else random.randbytes(16),
                        span_id=(salt + sid).to_bytes(8, "big"),
                        parent_span_id=(salt + parent).to_bytes(8, "big") if parent else b"",
                        name=name,
                        kind=Span.SPAN_KIND_INTERNAL,
                        start_time_unix_nano=start,
                        end_time_unix_nano=start + ms * 1_000_000,
                        attributes=[_kv(k, v) for k, v in attrs.items()],
                    )
                )
            request = ExportTraceServiceRequest(
                resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(spans=spans)])]
            )
            out.append(request.SerializeToString())
        return out


def send(url: str, key: str, bodies: list[bytes]) -> float:
    """Posts the requests one after another (one exporter); the wall seconds they took."""
    started = time.perf_counter()
    for body in bodies:
        request = urllib.request.Request(
            url + "/api/v1/otlp/v1/traces",
            data=body,
            headers={"Content-Type": "application/x-protobuf", "X-Service-Key": key},
        )
        with urllib.request.urlopen(request, timeout=300) as answer:
            reply = answer.read()
            if answer.status != 200 or reply:
                raise SystemExit(f"the export was not wholly accepted: {answer.status} {reply[:300]!r}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--port", type=int, default=8793)
    args = parser.parse_args()

    import psycopg

    server = Server(args.port, args.workers, db_name="tracerelay_bench_runs", env={"PGAPPNAME": APP_NAME})
    key = server.prepare()["bench"]
    url = server.start()
    run = Run(args.spans)
    kinds = {"run": [], "per call": []}  # type: dict[str, list[tuple[float, float]]]
    try:
        with psycopg.connect(server.database_url.replace("postgres://", "postgresql://"), autocommit=True) as db:
            send(url, key, run.bodies(as_run=False)[:1])  # warm the workers and the pool
            meter = CpuMeter(server.process.pid, APP_NAME, db)  # type: ignore[union-attr]
            for r in range(args.rounds):
                for way in ("run", "per call") if r % 2 == 0 else ("per call", "run"):
                    bodies = run.bodies(as_run=way == "run")
                    before = meter.snapshot()
                    seconds = send(url, key, bodies)
                    after = meter.snapshot()
                    cpu = CpuMeter.spent(before[0], after[0]) + CpuMeter.spent(before[1], after[1])
                    kinds[way].append((seconds, cpu))
                    print(f"round {r + 1} {way:<8}: {seconds:6.2f} s, server CPU {cpu:6.2f} s", flush=True)
        stored, deliveries = server.stored()
    finally:
        server.stop()
    n = len(run.spans)
    expected = n * 2 * args.rounds + BATCH
    print(f"\n{n:,} spans a round, {BATCH} a request, {args.rounds} rounds; load average {load_average():.1f}")
    print(f"stored {stored:,} of {expected:,} spans sent ({deliveries:,} deliveries)")
    print(f"{'':<10}{'wall s':>8}{'server CPU s':>14}{'wall µs/span':>14}{'CPU µs/span':>13}")
    for way, samples in kinds.items():
        wall = statistics.median(s for s, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        print(f"{way:<10}{wall:>8.2f}{cpu:>14.2f}{wall / n * 1e6:>14.0f}{cpu / n * 1e6:>13.0f}")
    if stored != expected:
        raise SystemExit("some spans were not stored")


if __name__ == "__main__":
    main()
