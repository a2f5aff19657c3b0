"""The client's queue and worker with an in-process transport: modes, batching, retries, drops, sampling."""

from __future__ import annotations

import logging
import re
import threading
import time

import pytest
import tracerelay
from fake_transport import KEY, FakeTransport, start_sdk, wait_for
from tracerelay import _client
from tracerelay._ids import new_trace_id, sample_point
from tracerelay._transport import Answer


def spans(n: int) -> None:
    for i in range(n):
        with tracerelay.trace(f"work-{i}"):
            pass


def test_it_sends_each_trace_at_once_in_immediate_mode(transport: FakeTransport) -> None:
    start_sdk(transport, service_name="checkout", environment="staging")
    spans(1)
    assert wait_for(lambda: transport.requests)
    method, path, trace = transport.requests[0]
    assert (method, path) == ("POST", "/api/v1/traces")
    assert trace["service_name"] == "checkout" and trace["environment"] == "staging"
    assert (trace["name"], trace["kind"], trace["run_id"], trace["parent_id"]) == ("work-0", "chain", trace["id"], None)
    assert "model" not in trace and "provider" not in trace
    assert tracerelay.stats()["sent"] == 1


def test_batch_mode_waits_for_the_batch_size_then_sends_batches(transport: FakeTransport) -> None:
    start_sdk(transport, batch=True, batch_size=10, flush_interval=60)
    spans(9)  # neither the size nor the interval is reached: nothing goes...
    spans(1)
    assert wait_for(lambda: len(transport.traces) == 10)
    # ...until the tenth, all ten in one request
    assert [(m, p, len(d["traces"])) for m, p, d in transport.requests] == [("POST", "/api/v1/traces/batch", 10)]


def test_batch_mode_woken_by_the_size_sends_full_batches_only(transport: FakeTransport) -> None:
    start_sdk(transport, batch=True, batch_size=10, flush_interval=60)
    spans(25)
    assert wait_for(lambda: len(transport.traces) == 20)
    assert [len(data["traces"]) for _, _, data in transport.requests] == [10, 10]
    assert tracerelay.stats()["queued"] == 5  # the worker is back to waiting: no partial batch went
    assert tracerelay.flush(timeout=5) and len(transport.traces) == 25


def test_batch_mode_sends_on_the_interval(transport: FakeTransport) -> None:
    start_sdk(transport, batch=True, batch_size=100, flush_interval=0.1)
    spans(3)
    assert wait_for(lambda: len(transport.traces) == 3)
    assert len(transport.requests) == 1


def test_flush_sends_everything_in_batches_of_the_batch_size(transport: FakeTransport) -> None:
    start_sdk(transport, batch=True, batch_size=100, flush_interval=60)
    spans(250)
    assert tracerelay.flush(timeout=5)
    assert [len(data["traces"]) for _, _, data in transport.requests] == [100, 100, 50]
    assert len({t["id"] for t in transport.traces}) == 250
    assert tracerelay.stats()["sent"] == 250


def test_a_full_queue_drops_the_newest_and_counts_them(transport: FakeTransport) -> None:
    transport.gate = threading.Event()  # the server hangs
    start_sdk(transport, max_queue_size=5)
    spans(1)
    assert transport.entered.wait(2)  # the worker holds the first trace, in flight
    spans(20)
    stats = tracerelay.stats()
    assert stats["dropped"] == 15 and stats["queued"] == 5
    transport.gate.set()
    assert tracerelay.flush(timeout=5)
    kept = [t["name"] for t in transport.traces]
    assert kept == ["work-0"] + [f"work-{i}" for i in range(5)]  # the oldest were kept
    assert tracerelay.stats()["sent"] == 6


def test_it_retries_429_and_5xx_honouring_retry_after(transport: FakeTransport) -> None:
    transport.answers.extend([Answer(503, retry_after=0.2), Answer(429, retry_after=0.1), Answer(0, error="reset")])
    start_sdk(transport, max_retries=5)
    started = time.monotonic()
    spans(1)
    assert tracerelay.flush(timeout=10)
    assert time.monotonic() - started >= 0.3  # both Retry-After waits were kept
    assert len(transport.requests) == 4
    assert len({t["id"] for t in transport.traces}) == 1  # the same id each time: the server stores it once
    stats = tracerelay.stats()
    assert (stats["sent"], stats["retries"], stats["failed"]) == (1, 3, 0)


def test_it_gives_up_after_max_retries_and_counts_the_traces_failed(
    transport: FakeTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_client.random, "uniform", lambda a, b: 0.0)  # no backoff wait in the test
    transport.answers.extend([Answer(0, error="refused")] * 3)
    start_sdk(transport, max_retries=2, batch=True)
    spans(4)
    assert tracerelay.flush(timeout=5)
    stats = tracerelay.stats()
    assert (stats["failed"], stats["sent"], stats["requests"]) == (4, 0, 3)
    spans(1)  # the server is back: the next traces go
    assert tracerelay.flush(timeout=5)
    assert tracerelay.stats()["sent"] == 1


def test_a_refusal_is_not_retried(transport: FakeTransport, caplog: pytest.LogCaptureFixture) -> None:
    transport.answers.append(Answer(401, {"detail": "Unknown API key."}))
    start_sdk(transport)
    spans(1)
    assert tracerelay.flush(timeout=5)
    assert len(transport.requests) == 1 and tracerelay.stats()["rejected"] == 1
    assert "401" in caplog.text and "Unknown API key" in caplog.text


def test_a_partly_refused_batch_counts_both_parts(transport: FakeTransport) -> None:
    results = [{"index": 0, "status": 201}, {"index": 1, "status": 400, "errors": {"model": ["Too long."]}}]
    transport.answers.append(Answer(207, {"created": 1, "failed": 1, "results": results}))
    start_sdk(transport, batch=True)
    spans(2)
    assert tracerelay.flush(timeout=5)
    stats = tracerelay.stats()
    assert (stats["sent"], stats["rejected"]) == (1, 1)


def test_a_transport_that_raises_loses_its_traces_not_the_worker(transport: FakeTransport) -> None:
    transport.answers.append(RuntimeError("boom"))
    start_sdk(transport)
    spans(1)
    assert tracerelay.flush(timeout=5)
    spans(1)
    assert tracerelay.flush(timeout=5)
    assert (tracerelay.stats()["failed"], tracerelay.stats()["sent"]) == (1, 1)


def test_sampling_keeps_the_traces_whose_point_is_below_the_rate(transport: FakeTransport) -> None:
    start_sdk(transport, sampling_rate=0.25, batch=True, batch_size=1000)
    spans(2000)
    assert tracerelay.flush(timeout=10)
    sent = transport.traces
    stats = tracerelay.stats()
    assert stats["sent"] + stats["sampled_out"] == 2000
    assert all(sample_point(t["id"]) < 0.25 for t in sent)
    assert 400 < len(sent) < 600


def test_a_trace_over_the_size_limit_keeps_its_metrics_without_the_bodies(transport: FakeTransport) -> None:
    start_sdk(transport)
    with tracerelay.trace("big", input="x" * (2 * 1024 * 1024)):
        pass
    assert tracerelay.flush(timeout=5)
    (trace,) = transport.traces
    assert trace["input"]["truncated"] is True and trace["input"]["bytes"] > 2 * 1024 * 1024
    assert trace["latency_ms"] is not None


def test_ids_are_trc_uuid7_hex_time_ordered_and_valid_for_the_server() -> None:
    ids = [new_trace_id() for _ in range(50)]
    for value in ids:
        assert re.fullmatch(r"trc_[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}", value)
    assert ids[0][:16] <= ids[-1][:16] and len(set(ids)) == 50


def test_shutdown_is_bounded_when_the_server_hangs_and_counts_what_it_gives_up(transport: FakeTransport) -> None:
    transport.gate = threading.Event()  # requests hang (and this transport cannot be cut short)
    start_sdk(transport)
    spans(3)
    assert transport.entered.wait(30)
    started = time.monotonic()
    assert tracerelay.shutdown(timeout=0.3) is False
    assert time.monotonic() - started < 1.5
    stats = tracerelay.stats()
    assert (stats["failed"], stats["sent"], stats["queued"]) == (3, 0, 0)  # in flight and queued, each once
    worker = tracerelay._last_stats["client"]._thread
    transport.gate.set()  # the stuck request ends after all: the counts given at shutdown stand
    worker.join(30)
    assert not worker.is_alive()
    assert (tracerelay.stats()["failed"], tracerelay.stats()["sent"]) == (3, 0)


UNREACHABLE = Answer(0, error="ConnectionRefusedError: [Errno 111] Connection refused", unreachable=True)


def test_the_default_shutdown_timeout_is_two_seconds(transport: FakeTransport) -> None:
    start_sdk(transport)
    from tracerelay import _state

    assert _state.client is not None and _state.client.config.shutdown_timeout == 2.0


def test_a_flush_fails_at_once_when_the_server_is_unreachable_and_keeps_the_traces(
    transport: FakeTransport,
) -> None:
    transport.answers.append(UNREACHABLE)
    start_sdk(transport, batch=True, flush_interval=60)
    spans(3)
    started = time.monotonic()
    assert tracerelay.flush(timeout=30) is False  # nothing to wait for
    assert time.monotonic() - started < 10
    assert (tracerelay.stats()["failed"], tracerelay.stats()["sent"]) == (0, 0)  # kept for the next attempt
    assert tracerelay.flush(timeout=30)  # the server is back: a new flush tries at once, no backoff wait
    assert (tracerelay.stats()["sent"], len(transport.requests)) == (3, 2)


def test_a_flush_tries_at_once_instead_of_waiting_out_a_backoff(transport: FakeTransport) -> None:
    transport.answers.append(Answer(503, retry_after=60))
    start_sdk(transport)
    spans(1)
    assert wait_for(lambda: tracerelay.stats()["retries"] == 1, timeout=30)  # waiting 60 s to try again
    started = time.monotonic()
    assert tracerelay.flush(timeout=30)
    assert time.monotonic() - started < 10 and len(transport.requests) == 2


def test_a_flush_that_cannot_finish_in_time_says_so_at_once(transport: FakeTransport) -> None:
    transport.answers.extend([Answer(503, retry_after=60), Answer(429, retry_after=60)])
    start_sdk(transport)
    spans(1)
    assert wait_for(lambda: tracerelay.stats()["retries"] == 1, timeout=30)
    started = time.monotonic()
    # One attempt at once (a 429 asking for 60 s), and 60 s is past the flush's 30: False now, not in 30 s.
    assert tracerelay.flush(timeout=30) is False
    assert time.monotonic() - started < 10 and len(transport.requests) == 2
    assert tracerelay.stats()["failed"] == 0
    assert tracerelay.flush(timeout=30) and tracerelay.stats()["sent"] == 1


def test_at_exit_each_pending_batch_gets_one_attempt_without_backoff(
    transport: FakeTransport, caplog: pytest.LogCaptureFixture
) -> None:
    transport.answers.extend([Answer(503, retry_after=60)] * 4)
    start_sdk(transport, batch=True, batch_size=10, flush_interval=60)
    spans(25)
    assert wait_for(lambda: tracerelay.stats()["retries"] == 1, timeout=30)  # the first batch waits 60 s
    started = time.monotonic()
    assert tracerelay.shutdown(timeout=5) is False
    assert time.monotonic() - started < 4
    # The first batch once more, then the second and the rest: one attempt each, none waited for.
    assert [len(data["traces"]) for _, _, data in transport.requests] == [10, 10, 10, 5]
    assert all(timeout is not None and timeout <= 5 for timeout in transport.timeouts[1:])  # within the deadline
    stats = tracerelay.stats()
    assert (stats["failed"], stats["sent"], stats["queued"]) == (25, 0, 0)
    (record,) = [r for r in caplog.records if r.name == "tracerelay"]
    assert "25 trace(s) not sent at exit" in record.getMessage() and "answered 503" in record.getMessage()


def test_at_exit_an_unreachable_server_drops_the_rest_at_once(
    transport: FakeTransport, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_client.random, "uniform", lambda a, b: 60.0)  # backoffs far longer than the test
    transport.answers.extend([UNREACHABLE, UNREACHABLE])
    start_sdk(transport, batch=True, batch_size=10, flush_interval=60)
    spans(25)
    assert wait_for(lambda: tracerelay.stats()["retries"] == 1, timeout=30)
    started = time.monotonic()
    assert tracerelay.shutdown(timeout=30) is False
    assert time.monotonic() - started < 10
    assert [len(data["traces"]) for _, _, data in transport.requests] == [10, 10]  # the rest never tried
    stats = tracerelay.stats()
    assert (stats["failed"], stats["captured"], stats["sent"], stats["queued"]) == (25, 10, 0, 0)
    (record,) = [r for r in caplog.records if r.name == "tracerelay"]
    assert record.levelno == logging.WARNING
    assert "25 trace(s) not sent at exit" in record.getMessage() and "Connection refused" in record.getMessage()


def test_at_exit_a_working_server_gets_everything(transport: FakeTransport, caplog: pytest.LogCaptureFixture) -> None:
    start_sdk(transport, batch=True, batch_size=10, flush_interval=60)
    spans(25)
    assert tracerelay.shutdown() is True
    assert (tracerelay.stats()["sent"], len(transport.traces)) == (25, 25)
    assert not [r for r in caplog.records if r.name == "tracerelay" and r.levelno >= logging.WARNING]


def test_debug_logs_what_is_sent_with_the_key_masked(
    transport: FakeTransport, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="tracerelay")
    start_sdk(transport, debug=True)
    spans(1)
    assert tracerelay.flush(timeout=5)
    assert '"name":"work-0"' in caplog.text and "/api/v1/traces" in caplog.text
    assert "tr_prod_te…" in caplog.text and KEY not in caplog.text


def test_init_reads_the_key_and_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACERELAY_API_KEY", "tr_dev_fromenv")
    monkeypatch.setenv("TRACERELAY_BASE_URL", "http://127.0.0.1:9/")
    tracerelay.init(instrument=False)
    from tracerelay import _state

    assert _state.client is not None
    assert _state.client.config.api_key == "tr_dev_fromenv"
    assert _state.client.config.base_url == "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "API key"),
        ({"api_key": "k", "sampling_rate": 1.5}, "sampling_rate"),
        ({"api_key": "k", "batch_size": 0}, "batch_size"),
        ({"api_key": "k", "flush_interval": 0}, "flush_interval"),
        ({"api_key": "k", "base_url": "ftp://x"}, "http"),
    ],
)
def test_init_refuses_bad_options(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tracerelay.init(instrument=False, **options)  # type: ignore[arg-type]


def test_init_again_flushes_the_old_client_and_replaces_it(transport: FakeTransport) -> None:
    start_sdk(transport, batch=True, flush_interval=60)
    spans(2)
    second = FakeTransport()
    start_sdk(second)
    spans(1)
    assert tracerelay.flush(timeout=5)
    assert len(transport.traces) == 2 and len(second.traces) == 1


def test_after_shutdown_nothing_is_recorded(transport: FakeTransport) -> None:
    start_sdk(transport)
    tracerelay.shutdown()
    spans(2)
    assert transport.requests == [] and tracerelay.flush() is True
