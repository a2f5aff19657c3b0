"""The TypeScript SDK (`sdk/typescript`), as it would be published: `npm pack`, installed into a clean project
with the real `openai` and `@anthropic-ai/sdk` packages (from npm's cache, no network), then

- its own `node --test` suites (instrumentation, runs, sending, whole apps with the service down);
- an ESM app and a CommonJS app, written as their users write them, delivering to a live server under test
  through the fake upstream on loopback: JSON and streamed calls stored with tokens, service and environment;
- sampling: the SDK's point for an id is the server's and the Python SDK's, bit for bit, on many ids.

`./bin/test` installs Node.js, npm and the package's devDependencies (`npm ci`) when they are missing.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tracerelay._ids import new_trace_id
from tracerelay._ids import sample_point as python_sample_point

from routing.router import sample_point as server_sample_point
from traces.models import Trace

from ..factories import ApiKeyFactory
from ..proxy.fake_upstream import CHAT_WORDS, FakeUpstream, FakeUpstreamServer

PACKAGE = Path(__file__).resolve().parents[2] / "sdk" / "typescript"
NODE = shutil.which("node")
NPM = shutil.which("npm")
pytestmark = pytest.mark.skipif(
    NODE is None or NPM is None or not (PACKAGE / "node_modules" / "typescript").is_dir(),
    reason="Node.js, npm and sdk/typescript's devDependencies are installed by ./bin/test",
)
REPLY = "".join(CHAT_WORDS)


def _sources_hash() -> str:
    digest = hashlib.sha256()
    tops = [PACKAGE / "package.json", PACKAGE / "package-lock.json", PACKAGE / "tsconfig.json"]
    for path in tops + sorted(p for d in ("src", "test", "scripts") for p in (PACKAGE / d).rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def packed_app() -> Path:
    """The packed SDK installed into a clean project; built once per source state (xdist workers share it)."""
    root = Path(tempfile.gettempdir()) / f"tracerelay-ts-{os.getuid()}"
    root.mkdir(exist_ok=True)
    work = root / _sources_hash()
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (work / "ready").exists():
            subprocess.run(
                [NODE, str(PACKAGE / "scripts" / "test-packed.mjs"), "--prepare", str(work)],
                check=True,
                timeout=600,
            )
            (work / "ready").write_text("ok")
    return work / "app"


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    server = FakeUpstreamServer()
    yield server.start()
    server.stop()


def test_the_packages_own_node_test_suites_pass(packed_app: Path) -> None:
    files = sorted(str(p.relative_to(packed_app)) for p in (packed_app / "test").glob("*.test.mjs"))
    assert files, "no node tests found"
    run = subprocess.run([NODE, "--test", *files], cwd=packed_app, capture_output=True, text=True, timeout=600)
    summary = [line for line in run.stdout.splitlines() if line.startswith(("# tests", "# pass", "# fail", "not ok"))]
    print("\n".join(summary))
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "# fail 0" in run.stdout


def _warm(url: str) -> None:
    """One trace of another team first: a cold live server takes seconds over its first request on a loaded
    machine, longer than the 2 s a short script's exit may take (that bound is tested in the node suites)."""
    request = urllib.request.Request(
        url + "/api/v1/traces",
        data=json.dumps({"model": "gpt-4o", "prompt_tokens": 1, "completion_tokens": 1}).encode(),
        headers={"Authorization": f"Bearer {ApiKeyFactory()._raw}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert answer.status == 201


def _run_app(packed_app: Path, name: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NODE, str(packed_app / "test" / "apps" / name)],
        cwd=packed_app,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("app", "calls"), [("chat.mjs", 2), ("chat.cjs", 4)])
def test_an_app_with_the_two_lines_stores_its_calls_on_a_live_server(
    live_server, upstream: FakeUpstream, packed_app: Path, app: str, calls: int
) -> None:
    key = ApiKeyFactory(environment="development")
    _warm(live_server.url)
    run = _run_app(
        packed_app,
        app,
        {
            "OPENAI_BASE_URL": upstream.url + "/v1",
            "OPENAI_API_KEY": "sk-test",
            "ANTHROPIC_BASE_URL": upstream.url + "/anthropic",
            "ANTHROPIC_API_KEY": "sk-test",
            "TRACERELAY_API_KEY": key._raw,
            "TRACERELAY_BASE_URL": live_server.url,
        },
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"{REPLY}\n{REPLY} (10 chunks)\n"), run.stdout
    assert "usage chunk" not in run.stdout
    # The app has exited: everything it recorded was sent before it did.
    traces = list(Trace.objects.filter(team_id=key.team_id).order_by("timestamp"))
    assert len(traces) == calls, run.stderr
    for trace in traces:
        assert (trace.service_name, trace.environment) == ("shop", "staging")
        assert trace.prompt_tokens > 0 and trace.completion_tokens > 0 and not trace.usage_estimated
        assert trace.cost is not None
    plain, streamed = traces[0], traces[1]
    assert (plain.model, plain.provider) == ("gpt-4o-mini-2024-07-18", "openai")
    assert plain.output == {"role": "assistant", "content": REPLY, "refusal": None}
    assert plain.input == {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    assert streamed.output == {"role": "assistant", "content": REPLY, "finish_reason": "stop"}
    assert streamed.completion_tokens == len(CHAT_WORDS)
    assert streamed.time_to_first_token_ms is not None and plain.time_to_first_token_ms is None
    if calls == 4:
        claude = traces[2:]
        assert {t.provider for t in claude} == {"anthropic"}
        assert [t.prompt_tokens for t in claude] == [25, 25]  # input + cache reads and writes, as the proxy counts


@pytest.mark.django_db(transaction=True)
def test_an_agent_run_is_stored_as_its_tree_on_a_live_server(
    live_server, upstream: FakeUpstream, packed_app: Path
) -> None:
    """Issue 22's "Checked by", through the TypeScript SDK: an agent span, a tool span, two chat calls of
    different models under different parents; the root is sent last (a span is sent when it ends)."""
    key = ApiKeyFactory(environment="development")
    _warm(live_server.url)
    run = _run_app(
        packed_app,
        "agent.mjs",
        {
            "OPENAI_BASE_URL": upstream.url + "/v1",
            "OPENAI_API_KEY": "sk-test",
            "ANTHROPIC_BASE_URL": upstream.url + "/anthropic",
            "ANTHROPIC_API_KEY": "sk-test",
            "TRACERELAY_API_KEY": key._raw,
            "TRACERELAY_BASE_URL": live_server.url,
        },
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"{REPLY} (shipped)\n"
    spans = {t.name: t for t in Trace.objects.filter(team_id=key.team_id)}
    assert set(spans) == {"triage", "lookup_order", "chat claude-3-5-haiku-latest", "chat gpt-4o-mini"}, run.stderr
    root, tool = spans["triage"], spans["lookup_order"]
    claude, gpt = spans["chat claude-3-5-haiku-latest"], spans["chat gpt-4o-mini"]
    assert {t.run_id for t in spans.values()} == {root.trace_id}
    assert {name: (t.kind, t.parent_id) for name, t in spans.items()} == {
        "triage": ("agent", ""),
        "lookup_order": ("tool", root.trace_id),
        "chat claude-3-5-haiku-latest": ("llm", tool.trace_id),
        "chat gpt-4o-mini": ("llm", root.trace_id),
    }
    assert root.received_at >= max(t.received_at for t in (tool, claude, gpt))  # the root arrived last
    # only the two chat calls are priced; the spans carry duration, input and output
    assert claude.cost and gpt.cost and (claude.provider, gpt.provider) == ("anthropic", "openai")
    for span in (root, tool):
        assert (span.cost, span.unpriced, span.model, span.prompt_tokens) == (None, False, "", 0)
        assert span.latency_ms is not None
    assert root.input == {"question": "where is order 42?"} and root.output == f"{REPLY} (shipped)"
    assert tool.output == {"status": "shipped", "checked": "Bonjour! How can I help?"}
    request = urllib.request.Request(
        live_server.url + f"/api/v1/runs/{root.trace_id}", headers={"Authorization": f"Bearer {key._raw}"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:  # the run API: the tree and its totals
        body = json.loads(answer.read())
    assert {s["id"]: s["parent_id"] for s in body["spans"]} == {t.trace_id: t.parent_id or None for t in spans.values()}
    assert (body["totals"]["spans"], body["totals"]["llm_calls"], body["totals"]["unpriced_calls"]) == (4, 2, 0)


@pytest.mark.django_db(transaction=True)
def test_sampling_rate_zero_sends_nothing_to_the_server(live_server, upstream: FakeUpstream, packed_app: Path) -> None:
    key = ApiKeyFactory()
    run = _run_app(
        packed_app,
        "chat.mjs",
        {
            "OPENAI_BASE_URL": upstream.url + "/v1",
            "OPENAI_API_KEY": "sk-test",
            "TRACERELAY_API_KEY": key._raw,
            "TRACERELAY_BASE_URL": live_server.url,
            "APP_SAMPLING": "0",
        },
    )
    assert run.returncode == 0, run.stderr
    assert not Trace.objects.filter(team_id=key.team_id).exists()


SAMPLE_SCRIPT = """
const { samplePoint, startSpan } = require("tracerelay");
const given = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
const own = Array.from({ length: 1000 }, () => startSpan("x").id);
const point = (id) => [id, samplePoint(id)];
process.stdout.write(JSON.stringify({ given: given.map(point), own: own.map(point) }));
"""


def test_sampling_points_agree_with_the_server_and_the_python_sdk_bit_for_bit(packed_app: Path) -> None:
    ids = [new_trace_id() for _ in range(2000)] + ["", "a", "run-1", "é" * 70, "x" * 128, "trc_" + "f" * 200]
    run = subprocess.run(
        [NODE, "-e", SAMPLE_SCRIPT], cwd=packed_app, input=json.dumps(ids), capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert [i for i, _ in out["given"]] == ids
    assert len({i for i, _ in out["own"]}) == 1000  # the TypeScript SDK's own ids, unique
    for trace_id, point in out["given"] + out["own"]:
        assert point == server_sample_point(trace_id) == python_sample_point(trace_id), trace_id
    # and so one rate keeps the same runs on every side
    kept = {i for i, p in out["given"] if p < 0.1}
    assert kept == {i for i in ids if server_sample_point(i) < 0.1}


CONSUMER = """
import {{ init, flush, shutdown, stats, trace, startSpan, currentSpan, type InitOptions, type Span }} from "tracerelay";
const options: InitOptions = {{ apiKey: "k", serviceName: "s", environment: "e", debug: false, samplingRate: 0.5,
  routingRules: [{{ name: "r", destination: "webhook" }}], batch: true, batchSize: 10, flushInterval: 500,
  maxQueueSize: 100, baseUrl: "http://127.0.0.1:1", captureContent: false, timeout: 1000, shutdownTimeout: 2000 }};
init(options);
const n: number = trace("x", {{ kind: "tool" }}, (span: Span) => {{ span.setOutput(1); return 1; }});
const p: Promise<string> = trace("y", async () => "y");
const s: Span = startSpan("z", {{ parent: currentSpan() ?? null }});
s.end();
const done: Promise<boolean> = flush(100);
void shutdown().then((ok: boolean) => ok);
void [n, p, done, stats()];
{bad}
"""


@pytest.mark.parametrize("extension", ["mts", "cts"])
def test_the_type_declarations_serve_esm_and_commonjs_consumers(packed_app: Path, extension: str) -> None:
    tsc = PACKAGE / "node_modules" / "typescript" / "bin" / "tsc"
    flags = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--types", "node"]
    tsc = [NODE, str(tsc)]
    flags += ["--typeRoots", str(PACKAGE / "node_modules" / "@types")]
    good = packed_app / f"consumer.{extension}"
    good.write_text(CONSUMER.format(bad=""))
    run = subprocess.run([*tsc, *flags, good.name], cwd=packed_app, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    # and the declarations do say something: a wrong option is refused
    bad = packed_app / f"wrong.{extension}"
    bad.write_text(CONSUMER.format(bad='init({ apiKey: "k", samplingRate: "all" });'))
    run = subprocess.run([*tsc, *flags, bad.name], cwd=packed_app, capture_output=True, text=True, timeout=600)
    assert run.returncode != 0 and "error TS2322" in run.stdout, run.stdout  # a string is no samplingRate
