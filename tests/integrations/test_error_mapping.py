"""Every exporter maps HTTP outcomes the same way: 2xx delivered; 408/429/5xx, timeouts and
connection failures retryable (Retry-After kept); other 4xx, redirects and refused URLs permanent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from integrations.exporters.base import ExportError, Target
from integrations.exporters.transport import retry_after_seconds
from integrations.registry import PLATFORMS, exporter_class
from tests.fakes import FakeServer, Reply

from .conftest import config_for, make_exporter, make_record


@pytest.fixture(params=PLATFORMS)
def platform(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def export_against(platform: str, *replies: Reply, timeout_s: float = 5.0) -> tuple[ExportError | None, FakeServer]:
    with FakeServer() as server, httpx.Client() as client:
        server.queue(*replies)
        exporter = make_exporter(platform, config_for(platform, server.url), client, timeout_s=timeout_s)
        try:
            exporter.export([make_record()])
        except ExportError as exc:
            return exc, server
    return None, server


def test_a_2xx_is_delivered(platform: str) -> None:
    error, server = export_against(platform, Reply(200, b""))
    assert error is None
    assert len(server.requests) == 1


def test_a_429_is_retryable_and_keeps_retry_after_seconds(platform: str) -> None:
    error, _ = export_against(platform, Reply(429, {"error": "slow down"}, {"Retry-After": "7"}))
    assert error is not None
    assert error.permanent is False
    assert error.retry_after == 7
    assert error.status_code == 429


def test_retry_after_may_be_an_http_date(platform: str) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=90), usegmt=True)
    error, _ = export_against(platform, Reply(503, "busy", {"Retry-After": when}))
    assert error is not None and not error.permanent
    assert 80 <= (error.retry_after or 0) <= 91


@pytest.mark.parametrize("status", [408, 500, 502, 503, 504])
def test_server_errors_and_408_are_retryable(platform: str, status: int) -> None:
    error, _ = export_against(platform, Reply(status, "oops"))
    assert error is not None
    assert error.permanent is False
    assert error.retry_after is None
    assert f"HTTP {status}" in error.message


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_other_4xx_are_permanent(platform: str, status: int) -> None:
    error, _ = export_against(platform, Reply(status, {"error": "no"}))
    assert error is not None
    assert error.permanent is True
    assert error.status_code == status


def test_a_redirect_is_not_followed_and_is_permanent(platform: str) -> None:
    error, server = export_against(platform, Reply(301, b"", {"Location": "http://169.254.169.254/latest"}))
    assert error is not None and error.permanent is True
    assert "redirects are not followed" in error.message
    assert len(server.requests) == 1


def test_a_timeout_is_retryable(platform: str) -> None:
    error, _ = export_against(platform, Reply(200, b"", delay_s=1.0), timeout_s=0.2)
    assert error is not None
    assert error.permanent is False
    assert "timed out after 0.2s" in error.message


def test_a_dropped_connection_is_retryable(platform: str) -> None:
    error, _ = export_against(platform, Reply(close=True))
    assert error is not None
    assert error.permanent is False
    assert "connection failed" in error.message


def test_a_refused_connection_is_retryable(platform: str) -> None:
    with FakeServer() as server:
        url = server.url
    with httpx.Client() as client:
        exporter = make_exporter(platform, config_for(platform, url), client)
        with pytest.raises(ExportError) as caught:
            exporter.export([make_record()])
    assert caught.value.permanent is False


def test_a_metadata_address_is_refused_at_send_time_without_a_request(platform: str) -> None:
    cls = exporter_class(platform)
    good = cls.validate_config(config_for(platform, "http://127.0.0.1:9"))
    bad = {k: (v.replace("127.0.0.1:9", "169.254.169.254") if isinstance(v, str) else v) for k, v in good.items()}
    target = Target(platform=cls.platform, name="x", config=bad)
    with httpx.Client(transport=httpx.MockTransport(lambda r: pytest.fail("no request may be sent"))) as client:
        with pytest.raises(ExportError) as caught:
            cls(target, client).export([make_record()])
    assert caught.value.permanent is True
    assert "metadata" in caught.value.message


def test_the_connection_check_reports_a_timeout_without_raising(platform: str) -> None:
    with FakeServer() as server, httpx.Client() as client:
        server.queue(Reply(200, b"", delay_s=1.0))
        result = make_exporter(platform, config_for(platform, server.url), client, timeout_s=0.2).check()
    assert result.ok is False
    assert "timed out" in result.message
    assert result.status_code is None


def test_retry_after_parsing() -> None:
    assert retry_after_seconds("3") == 3
    assert retry_after_seconds("1.5") == 1.5
    assert retry_after_seconds("-4") == 0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0  # in the past
