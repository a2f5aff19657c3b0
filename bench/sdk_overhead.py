"""What the Python SDK adds to an instrumented call on the caller's thread, and what its worker sends per second.

    .venv/bin/python bench/sdk_overhead.py [--calls N] [--rounds R] [--peers-venv .venv-peers]

In-process, no network. A whole `openai` call through an `httpx2.MockTransport` costs ~1-10 ms of
the client library's own work (request building, validation, parsing), which swamps and blurs a few
microseconds on a shared machine; so the instrumented method is `Completions.create` replaced by a
stand-in that returns a real `ChatCompletion` (JSON calls) or a real `openai.Stream` over the bytes
of an SSE answer of 10 chunks (plus the usage chunk when asked for), and every instrumentation (ours,
the peers') wraps that stand-in exactly as it wraps the real method. A plain call and an
instrumented one then differ by the instrumentation alone. The whole-call figure through the
MockTransport is printed for scale.

1. Added time per call on the caller's thread, JSON and streamed (the stream fully read): the
   thread's CPU time (`time.thread_time`, so other processes on a shared machine do not count),
   R rounds of N plain calls, then R rounds instrumented; the median round, per call. Ours in batch
   mode (the worker asleep during the round, as it is between flushes) and in immediate mode (the
   worker wakes for each trace and competes for the GIL, sending to a null transport).
2. The worker's throughput in batch mode: traces built, JSON-encoded and gzipped per second (a
   transport that compresses as the real one does and answers 200 without a network).
3. Peers, when a venv with them exists (--peers-venv; made by hand: `python -m venv .venv-peers &&
   .venv-peers/bin/pip install openai==3.51.0 opentelemetry-sdk opentelemetry-instrumentation-openai
   langfuse`): the same calls instrumented by OpenLLMetry (opentelemetry-instrumentation-openai,
   BatchSpanProcessor with an exporter that drops the spans) and by Langfuse's OpenAI integration
   (`langfuse.openai`, its OTel exporter pointed at a closed port), each in that venv's interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CREATED = 1_700_000_000
WORDS = ["Hello", " there", "!", " How", " can", " I", " help", " you", " today", "?"]
MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hello, please."}]


def _chat_json() -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": CREATED,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "".join(WORDS)},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
        }
    ).encode()


def _chat_sse(include_usage: bool) -> bytes:
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": CREATED, "model": "gpt-4o-mini"}
    extra = {"usage": None} if include_usage else {}
    events = []
    for i, word in enumerate(WORDS):
        delta = {"role": "assistant", "content": word} if i == 0 else {"content": word}
        events.append({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}], **extra})
    events.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], **extra})
    if include_usage:
        usage = {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}
        events.append({**head, "choices": [], "usage": usage})
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def make_client() -> Any:
    import httpx2
    import openai

    body, sse, sse_usage = _chat_json(), _chat_sse(False), _chat_sse(True)

    def handler(request: Any) -> Any:
        data = json.loads(request.content)
        if data.get("stream"):
            usage = bool((data.get("stream_options") or {}).get("include_usage"))
            return httpx2.Response(
                200, content=sse_usage if usage else sse, headers={"content-type": "text/event-stream"}
            )
        return httpx2.Response(200, content=body, headers={"content-type": "application/json"})

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    return openai.OpenAI(api_key="sk-bench", base_url="http://bench.invalid/v1", http_client=http, max_retries=0)


def install_stand_in(client: Any) -> None:
    """`Completions.create` → a stand-in answering real openai objects without a request (see above)."""
    import httpx2
    from openai import Stream
    from openai.resources.chat.completions.completions import Completions
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    completion = ChatCompletion.model_validate_json(_chat_json())

    def chunks(sse: bytes) -> list[Any]:
        events = [line[6:] for line in sse.split(b"\n") if line.startswith(b"data: {")]
        return [ChatCompletionChunk.model_validate_json(event) for event in events]

    plain, with_usage = chunks(_chat_sse(False)), chunks(_chat_sse(True))
    response = httpx2.Response(200, request=httpx2.Request("POST", "http://bench.invalid/v1/chat/completions"))

    def create(self: Any, **kwargs: Any) -> Any:
        if kwargs.get("stream"):
            options = kwargs.get("stream_options")
            usage = isinstance(options, dict) and options.get("include_usage")
            stream = Stream.__new__(Stream)  # a real Stream, over chunks parsed once
            stream.response = response
            stream._iterator = iter(with_usage if usage else plain)
            return stream
        return completion

    Completions.create = create  # type: ignore[method-assign]


def whole_call_us(n: int) -> float:
    client = make_client()
    call_json(client)
    return statistics.median(per_call_us(call_json, client, max(n // 20, 5), time.perf_counter) for _ in range(5))


def call_json(client: Any) -> None:
    client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)


def call_stream(client: Any) -> None:
    for _ in client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True):
        pass


def per_call_us(fn: Callable[[Any], None], client: Any, n: int, clock: Callable[[], float] = time.thread_time) -> float:
    """CPU time of this thread per call: what the caller's thread spends, not what other processes take."""
    started = clock()
    for _ in range(n):
        fn(client)
    return (clock() - started) / n * 1e6


def before_after(
    fn: Callable[[Any], None], client: Any, on: Callable[[], None], off: Callable[[], None], rounds: int, n: int
) -> tuple[float, float]:
    """(median plain µs/call, median instrumented µs/call): rounds without, then rounds with."""
    off()
    fn(client)
    plain = statistics.median(per_call_us(fn, client, n) for _ in range(rounds))
    on()
    fn(client)
    traced = statistics.median(per_call_us(fn, client, n) for _ in range(rounds))
    off()
    return plain, traced


# --- ours ---------------------------------------------------------------------------------------


class NullTransport:
    """Answers 200 without a network (immediate mode's worker still builds and encodes each trace)."""

    def request(self, method: str, path: str, body: bytes | None, *, timeout: float | None = None) -> Any:
        from tracerelay._transport import Answer

        return Answer(200 if path.endswith("batch") else 201, {"failed": 0})

    def close(self) -> None:
        pass


def gzip_transport() -> Any:
    from tracerelay._transport import Answer, Transport

    class Gzipping(Transport):
        def _send(self, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float) -> Answer:
            return Answer(200 if path.endswith("batch") else 201, {"failed": 0})

    return Gzipping("http://bench.invalid", "tr_prod_bench", timeout=1, compress=True)


def bench_ours(rounds: int, n: int) -> dict[str, Any]:
    import tracerelay
    from tracerelay import instrument

    whole = whole_call_us(n)
    client = make_client()
    install_stand_in(client)
    results: dict[str, Any] = {"whole_call_us": whole}
    for mode, options in (
        ("batch", {"batch": True, "flush_interval": 3600, "batch_size": 1000}),
        ("immediate", {"batch": False}),
    ):
        tracerelay.init(api_key="tr_prod_bench", max_queue_size=10**7, transport=NullTransport(), **options)

        def on() -> None:
            instrument.install()

        def off() -> None:
            tracerelay.flush(timeout=60)
            instrument.uninstall()

        for name, fn in (("json", call_json), ("stream", call_stream)):
            plain, traced = before_after(fn, client, on, off, rounds, n)
            results[f"ours/{mode}/{name}"] = (plain, traced)
        tracerelay.shutdown()

    # Throughput: record calls with the worker asleep, then time the flush that builds, encodes,
    # gzips and "sends" them all.
    total = rounds * n * 4
    tracerelay.init(
        api_key="tr_prod_bench",
        batch=True,
        batch_size=500,
        flush_interval=3600,
        max_queue_size=10**7,
        transport=gzip_transport(),
    )
    for i in range(total):
        (call_stream if i % 2 else call_json)(client)
    started, cpu = time.perf_counter(), time.process_time()
    tracerelay.flush(timeout=600)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu  # the caller waits: CPU is the worker's
    stats = tracerelay.stats()
    tracerelay.shutdown()
    instrument.uninstall()
    results["throughput"] = {
        "traces": stats["sent"],
        "seconds": elapsed,
        "cpu": cpu,
        "per_second": stats["sent"] / elapsed,
        "per_cpu_second": stats["sent"] / cpu,
    }
    return results


# --- peers (run in the peers' venv) -------------------------------------------------------------


def bench_openllmetry(rounds: int, n: int) -> dict[str, Any]:
    from opentelemetry import trace
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop(), max_queue_size=10**6, schedule_delay_millis=3600_000))
    trace.set_tracer_provider(provider)
    client = make_client()
    install_stand_in(client)
    calls = (("json", call_json), ("stream", call_stream))
    # Plain first, then instrumented once: its uninstrument() leaves its wrapper on the method, so
    # toggling would measure it against itself.
    plain = {name: statistics.median(per_call_us(fn, client, n) for _ in range(rounds)) for name, fn in calls}
    OpenAIInstrumentor().instrument()
    results = {}
    for name, fn in calls:
        fn(client)
        traced = statistics.median(per_call_us(fn, client, n) for _ in range(rounds))
        results[f"openllmetry/{name}"] = (plain[name], traced)
    return results


def bench_langfuse(rounds: int, n: int) -> dict[str, Any]:
    os.environ.update(
        {
            "LANGFUSE_PUBLIC_KEY": "pk-lf-bench",
            "LANGFUSE_SECRET_KEY": "sk-lf-bench",
            "LANGFUSE_HOST": "http://127.0.0.1:9",
            "LANGFUSE_FLUSH_INTERVAL": "3600",
        }
    )
    client = make_client()
    install_stand_in(client)
    results = {}
    calls = (("json", call_json), ("stream", call_stream))
    plain = {name: statistics.median(per_call_us(fn, client, n) for _ in range(rounds)) for name, fn in calls}
    import langfuse.openai  # noqa: F401  (patches openai on import; it has no off switch)

    for name, fn in (("json", call_json), ("stream", call_stream)):
        traced = statistics.median(per_call_us(fn, client, n) for _ in range(rounds))
        results[f"langfuse/{name}"] = (plain[name], traced)
    return results


def run_peers(venv: Path, rounds: int, n: int) -> dict[str, Any]:
    python = venv / "bin" / "python"
    results: dict[str, Any] = {}
    if not python.exists():
        print(f"(no peers venv at {venv}: peers skipped)")
        return results
    for peer in ("openllmetry", "langfuse"):
        try:
            done = subprocess.run(
                [str(python), __file__, "--peer", peer, "--rounds", str(rounds), "--calls", str(n)],
                capture_output=True,
                text=True,
                timeout=600,
            )
        except subprocess.TimeoutExpired:
            print(f"({peer} took over 10 minutes: skipped)")
            continue
        if done.returncode != 0:
            print(f"({peer} did not run: {done.stderr.strip().splitlines()[-1:]})")
            continue
        results.update(json.loads(done.stdout.strip().splitlines()[-1]))
    return results


def show(results: dict[str, Any]) -> None:
    for key, (plain, traced) in results.items():
        name, _, kind = key.rpartition("/")
        print(f"{name:<24} {kind:<7} {plain:>9.1f} {traced:>10.1f} {traced - plain:>9.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--peers-venv", type=Path, default=ROOT / ".venv-peers")
    parser.add_argument("--peer", choices=("openllmetry", "langfuse"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer:
        bench = bench_openllmetry if args.peer == "openllmetry" else bench_langfuse
        print(json.dumps(bench(args.rounds, args.calls)))
        return

    results = bench_ours(args.rounds, args.calls)
    throughput = results.pop("throughput")
    whole = results.pop("whole_call_us")
    print(f"openai {__import__('openai').__version__}, {args.rounds} rounds x {args.calls} calls, median round,")
    print("CPU time of the calling thread per call")
    print(f"{'instrumentation':<24} {'call':<7} {'plain µs':>9} {'traced µs':>10} {'added µs':>9}")
    show(results)
    show(run_peers(args.peers_venv, args.rounds, args.calls))
    print(f"for scale: one whole plain openai call through httpx2.MockTransport: {whole:,.0f} µs (wall)")
    print(
        f"worker, batch mode: {throughput['traces']} traces built, JSON-encoded and gzipped in "
        f"{throughput['seconds']:.2f} s wall ({throughput['per_second']:,.0f}/s), {throughput['cpu']:.2f} s CPU "
        f"= {throughput['per_cpu_second']:,.0f} traces per CPU second"
    )


if __name__ == "__main__":
    main()
