"""The background writer: batches, the spool when the database is out, replay, refusals, draining.

The first tests drive a `TraceWriter` directly (with an ingest that fails on demand); the last run
the real proxy in a subprocess whose database connection goes through a TCP forwarder that we cut.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest
from django.conf import settings
from django.db import OperationalError

from accounts.principals import KeyPrincipal
from pipeline.services import traces_ingest
from tests.factories import ApiKeyFactory
from traces.ids import new_trace_id
from traces.models import Trace
from traces.proxy.capture import Capture
from traces.proxy.upstreams import builtin_targets
from traces.proxy.writer import Spool, TraceWriter

from .tcp_fault import TcpFault

ROOT = Path(__file__).resolve().parents[2]
OPENAI, _ = builtin_targets("http://upstream.invalid/v1", "http://upstream.invalid")
RESPONSE = orjson.dumps(
    {
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }
)


def _principal(key) -> KeyPrincipal:
    return KeyPrincipal(key.id, key.team_id, key.environment, key.prefix, key.scopes)


def _capture(principal: KeyPrincipal) -> Capture:
    capture = Capture(new_trace_id(), principal, OPENAI, "POST", "chat/completions")
    capture.started = time.time()
    capture.request_body = b'{"model": "gpt-4o-mini", "messages": []}'
    capture.status_code = 200
    capture.response_body = RESPONSE
    capture.latency_ms = 12.5
    return capture


class Outage:
    """traces_ingest, failing like a database that cannot be reached while ``down``."""

    def __init__(self) -> None:
        self.down = False
        self.calls = 0

    def __call__(self, **kwargs):
        self.calls += 1
        if self.down:
            raise OperationalError("connection to server at 127.0.0.1 failed: Connection refused")
        return traces_ingest(**kwargs)


def _wait_for(predicate, timeout: float = 20.0, message: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {message}"
        time.sleep(0.05)


@pytest.fixture
def principal(transactional_db, team) -> KeyPrincipal:
    return _principal(ApiKeyFactory(team=team, environment="production"))


@pytest.fixture
def make_writer(tmp_path):
    writers: list[TraceWriter] = []

    def make(**options) -> TraceWriter:
        writer = TraceWriter(spool_dir=tmp_path / "spool", **{"interval": 0.01, **options})
        writers.append(writer)
        return writer

    yield make
    for writer in writers:
        writer.stop()


def test_it_stores_captures_in_batches(principal, make_writer):
    calls = []

    def ingest(**kwargs):
        calls.append(len(kwargs["items"]))
        return traces_ingest(**kwargs)

    writer = make_writer(interval=0.5, ingest=ingest)
    captures = [_capture(principal) for _ in range(30)]
    for capture in captures:
        writer.submit(capture)
    writer.start()
    assert writer.flush()

    assert sum(calls) == 30 and len(calls) <= 2  # batched, not one transaction per call
    stored = Trace.objects.filter(trace_id__in=[c.trace_id for c in captures])
    assert stored.count() == 30
    assert {t.total_tokens for t in stored} == {7}
    assert writer.stats.stored == 30


def test_traces_are_spooled_while_the_database_is_out_and_replayed_after(principal, make_writer):
    outage = Outage()
    outage.down = True
    writer = make_writer(ingest=outage)
    writer.start()
    captures = [_capture(principal) for _ in range(20)]
    for capture in captures:
        writer.submit(capture)
    assert writer.flush()

    files = writer.spool.files()
    assert files, "nothing was spooled"
    spooled = [orjson.loads(line) for path in files for line in path.read_bytes().splitlines()]
    assert sorted(r["trace"]["id"] for r in spooled) == sorted(c.trace_id for c in captures)
    assert Trace.objects.count() == 0
    calls_while_down = outage.calls

    # While backing off, later batches go straight to the spool without trying the database.
    extra = _capture(principal)
    writer.submit(extra)
    assert writer.flush()
    assert outage.calls == calls_while_down

    outage.down = False
    _wait_for(lambda: writer.flush() and Trace.objects.count() == 21, message="the replay")
    assert writer.spool.files() == []
    assert set(Trace.objects.values_list("trace_id", flat=True)) == {c.trace_id for c in [*captures, extra]}
    assert writer.stats.replayed >= 20


def test_replaying_the_same_traces_twice_stores_them_once(principal, make_writer, tmp_path):
    writer = make_writer()
    pairs = [(principal, writer._build(_capture(principal))) for _ in range(3)]
    writer.spool.append(pairs)
    writer.spool.seal()
    first = writer.spool.files()[0]
    (first.parent / ("copy-" + first.name)).write_bytes(first.read_bytes())  # as if a crash left it behind

    writer.start()
    assert writer.flush()

    assert Trace.objects.count() == 3
    assert writer.spool.files() == []


def test_traces_the_database_refuses_are_set_aside_and_the_rest_stored(principal, make_writer, team):
    writer = make_writer()
    ghost = KeyPrincipal(principal.key_id, team.pk + 10_000, "production", "tr_prod_x", principal.scopes)
    good, orphan = _capture(principal), _capture(ghost)
    writer.submit(good)
    writer.submit(orphan)
    writer.start()
    assert writer.flush()

    assert Trace.objects.filter(trace_id=good.trace_id).exists()
    rejected = list((writer.spool.directory / "rejected").glob("*.jsonl"))
    assert len(rejected) == 1
    record = orjson.loads(rejected[0].read_bytes().splitlines()[0])
    assert record["trace"]["id"] == orphan.trace_id
    assert "IntegrityError" in record["reason"]["exception"]
    assert writer.stats.rejected == 1
    assert writer.spool.files() == []  # not retried forever


def test_stop_drains_what_is_queued(principal, make_writer):
    writer = make_writer(interval=30)  # a batch would wait 30 s for company...
    writer.start()
    captures = [_capture(principal) for _ in range(5)]
    for capture in captures:
        writer.submit(capture)
    started = time.monotonic()
    writer.stop()  # ...but stopping writes it at once

    assert time.monotonic() - started < 10
    assert Trace.objects.filter(trace_id__in=[c.trace_id for c in captures]).count() == 5


def test_a_full_queue_spools_instead_of_growing(principal, make_writer):
    writer = make_writer(queue_max=0)
    capture = _capture(principal)
    writer.submit(capture)  # the thread is not even running: straight to disk

    assert len(writer.spool.files()) == 1
    writer.start()
    assert writer.flush()
    assert Trace.objects.filter(trace_id=capture.trace_id).exists()


def test_a_spool_file_another_writer_holds_is_left_alone(principal, make_writer):
    writer = make_writer()
    writer.spool.append([(principal, writer._build(_capture(principal)))])
    writer.spool.seal()
    path = writer.spool.files()[0]
    with open(path, "ab") as other:  # another process still appending to it
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        writer.start()
        assert writer.flush()
        assert path.exists() and Trace.objects.count() == 0
    assert writer.flush()
    assert not path.exists() and Trace.objects.count() == 1


def test_a_torn_last_line_is_skipped_and_the_rest_replayed(principal, make_writer):
    writer = make_writer()
    writer.spool.append([(principal, writer._build(_capture(principal))) for _ in range(2)])
    writer.spool.seal()
    path = writer.spool.files()[0]
    with open(path, "ab") as handle:
        handle.write(b'{"principal": {"key_id": 1, "te')  # a crash in the middle of an append

    writer.start()
    assert writer.flush()
    assert Trace.objects.count() == 2
    assert not path.exists()


def test_spooled_lines_carry_everything_needed_to_replay(principal, tmp_path):
    spool = Spool(tmp_path)
    spool.append([(principal, {"id": "trc_x", "model": "m"})])
    spool.seal()
    with Spool.claim(spool.files()[0]) as handle:
        assert Spool.read(handle) == [(principal, {"id": "trc_x", "model": "m"})]


# -- the real thing: a proxy process whose database goes away ------------------------------------


def _start_proxy(tmp_path: Path, database_port: int, upstream: str, **env: str) -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    database = settings.DATABASES["default"]
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"postgres://{database['USER']}@127.0.0.1:{database_port}/{database['NAME']}",
        "TRACERELAY_DATA_DIR": str(tmp_path / "data"),
        "TRACERELAY_PROXY_SPOOL_DIR": str(tmp_path / "spool"),
        "TRACERELAY_OPENAI_BASE_URL": upstream + "/v1",
        "TRACERELAY_PROXY_WRITER_INTERVAL": "0.01",
        "TRACERELAY_PROXY_CACHE_TTL": "120",
        "DATABASE_POOL_MIN": "1",
        **env,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
        + ["--loop", "uvloop", "--http", "httptools", "--no-access-log"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "proxy.log", "wb"),  # noqa: SIM115 - kept for the process's life
    )
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(url + "/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            assert process.poll() is None, (tmp_path / "proxy.log").read_text()
            return False

    _wait_for(ready, timeout=30, message="the proxy process")
    return process, url


def _stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_calls_succeed_through_a_database_outage_and_no_trace_is_lost(transactional_db, team, fake_upstream, tmp_path):
    key = ApiKeyFactory(team=team, environment="production")._raw
    database = TcpFault("127.0.0.1", int(settings.DATABASES["default"].get("PORT") or 5432)).start()
    process, url = _start_proxy(tmp_path, database.port, fake_upstream.url)
    try:
        client = httpx.Client(base_url=url + "/api/v1/proxy", headers={"X-Service-Key": key}, timeout=30)
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}

        first = client.post("/chat/completions", json=body)
        assert first.status_code == 200
        _wait_for(lambda: Trace.objects.filter(trace_id=first.headers["x-service-id"]).exists(), message="trace 1")

        database.cut()
        during = []
        for _ in range(5):
            started = time.monotonic()
            response = client.post("/chat/completions", json=body)
            assert response.status_code == 200
            assert time.monotonic() - started < 2  # never waits on the database
            during.append(response.headers["x-service-id"])

        def spooled() -> set[str]:
            lines = [line for p in (tmp_path / "spool").glob("*.jsonl") for line in p.read_bytes().splitlines()]
            return {orjson.loads(line)["trace"]["id"] for line in lines}

        _wait_for(lambda: spooled() >= set(during), timeout=40, message="the spool")
        assert not Trace.objects.filter(trace_id__in=during).exists()

        database.restore()
        _wait_for(lambda: Trace.objects.filter(trace_id__in=during).count() == 5, timeout=60, message="the replay")
        _wait_for(lambda: not list((tmp_path / "spool").glob("*.jsonl")), message="the spool to empty")
        assert Trace.objects.filter(trace_id__in=[first.headers["x-service-id"], *during]).count() == 6
    finally:
        _stop(process)
        database.stop()


def test_shutting_down_drains_the_writer(transactional_db, team, fake_upstream, tmp_path):
    key = ApiKeyFactory(team=team, environment="production")._raw
    port = int(settings.DATABASES["default"].get("PORT") or 5432)
    # A batch would wait a minute to fill: only the shutdown drain can have written it.
    process, url = _start_proxy(tmp_path, port, fake_upstream.url, TRACERELAY_PROXY_WRITER_INTERVAL="60")
    try:
        response = httpx.post(
            url + "/api/v1/proxy/chat/completions",
            json={"model": "gpt-4o-mini", "messages": []},
            headers={"X-Service-Key": key},
        )
        assert response.status_code == 200
        time.sleep(0.3)
        assert not Trace.objects.filter(trace_id=response.headers["x-service-id"]).exists()
    finally:
        _stop(process)
    # (uvicorn re-raises SIGTERM after a graceful shutdown, so the exit status is the signal's.)
    assert "Application shutdown complete" in (tmp_path / "proxy.log").read_text()
    assert Trace.objects.filter(trace_id=response.headers["x-service-id"]).exists()
