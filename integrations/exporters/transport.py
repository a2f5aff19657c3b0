"""`HttpExporter`: what every exporter shares — declared config fields, the outbound URL guard,
timeouts, and one mapping from HTTP outcomes to `ExportError`:

* 2xx → delivered;
* 408, 429, 5xx, timeouts, connection failures → retryable, with ``Retry-After`` honoured;
* any other 4xx, a redirect (never followed: it could point past the URL guard), or a URL the
  guard refuses → permanent.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar

import httpx

from integrations.urlguard import UnsafeDestination, check_url

from .base import CheckResult, Exporter, ExportError, Target
from .configs import Field, clean_config

USER_AGENT = "tracerelay-exporter/1.0"
RETRYABLE_STATUS = frozenset({408, 425, 429})
BODY_SNIPPET = 300


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` as seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def body_snippet(response: httpx.Response) -> str:
    try:
        text = response.text
    except Exception:  # undecodable body: the status says enough
        return ""
    text = " ".join(text.split())
    return text[:BODY_SNIPPET] + ("…" if len(text) > BODY_SNIPPET else "")


def error_for_response(response: httpx.Response, destination: str) -> ExportError | None:
    """None for 2xx, else the `ExportError` the status calls for."""
    status = response.status_code
    if 200 <= status < 300:
        return None
    snippet = body_snippet(response)
    message = f"{destination} answered HTTP {status}" + (f": {snippet}" if snippet else "")
    if 300 <= status < 400:
        location = response.headers.get("location", "")
        return ExportError(
            f"{destination} answered HTTP {status} (redirect to {location or '?'}); redirects are not followed, "
            "configure the final URL",
            permanent=True,
            status_code=status,
        )
    if status in RETRYABLE_STATUS or status >= 500:
        return ExportError(
            message,
            permanent=False,
            retry_after=retry_after_seconds(response.headers.get("retry-after")),
            status_code=status,
        )
    return ExportError(message, permanent=True, status_code=status)


def errors_in_answer(response: httpx.Response) -> str | None:
    """A 2xx JSON answer that still reports errors (a non-empty top-level ``errors`` or ``error``,
    as LangSmith's and Datadog's error bodies have them): the reason, else None."""
    if "json" not in response.headers.get("content-type", "") or not response.content:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    found = body.get("errors") or body.get("error")
    return body_snippet(response) if found else None


class HttpExporter(Exporter):
    """Base of every exporter here. Subclasses declare ``fields`` and implement `export`/`check`."""

    fields: ClassVar[tuple[Field, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.secret_fields = frozenset(f.name for f in cls.fields if f.secret)

    def __init__(self, target: Target, client: httpx.Client) -> None:
        super().__init__(target, client)
        self.config: Mapping[str, Any] = target.config

    @classmethod
    def validate_config(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        return clean_config(cls.fields, config, platform=cls.platform)

    def request(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> httpx.Response:
        """One request through the URL guard, with the integration's timeout. Transport failures
        become `ExportError`; the response is returned whatever its status."""
        try:
            check_url(url)
        except UnsafeDestination as exc:
            raise ExportError(f"{self.destination}: refused destination URL: {exc}", permanent=True)
        all_headers = {"User-Agent": USER_AGENT, **(headers or {})}
        try:
            return self.client.request(
                method,
                url,
                content=content,
                json=json,
                headers=all_headers,
                params=params,
                timeout=self.target.timeout_s,
                follow_redirects=False,
            )
        except httpx.TimeoutException as exc:
            raise ExportError(
                f"{self.destination}: timed out after {self.target.timeout_s:g}s ({type(exc).__name__})",
                permanent=False,
            )
        except httpx.InvalidURL as exc:
            raise ExportError(f"{self.destination}: invalid URL: {exc}", permanent=True)
        except UnsafeDestination as exc:  # the address checked where the connection is made
            raise ExportError(f"{self.destination}: refused destination address: {exc}", permanent=True)
        except httpx.TransportError as exc:
            raise ExportError(f"{self.destination}: connection failed: {exc or type(exc).__name__}", permanent=False)

    def send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """`request`, raising `ExportError` unless the answer is 2xx."""
        response = self.request(method, url, **kwargs)
        error = error_for_response(response, self.destination)
        if error is not None:
            raise error
        return response

    def probe(self, method: str, url: str, *, ok_message: str, **kwargs: Any) -> CheckResult:
        """A connection check: one request, its outcome as a `CheckResult` (never raises)."""
        started = time.perf_counter()
        try:
            response = self.send(method, url, **kwargs)
        except ExportError as exc:
            return CheckResult(
                ok=False,
                message=_check_message(exc),
                status_code=exc.status_code,
                latency_ms=_ms_since(started),
            )
        return CheckResult(ok=True, message=ok_message, status_code=response.status_code, latency_ms=_ms_since(started))


def _ms_since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def _check_message(exc: ExportError) -> str:
    status = exc.status_code
    if status in (401, 403):
        return f"Authentication failed: {exc.message}. Check the credentials."
    if status == 404:
        return f"Not found: {exc.message}. Check the host, path and project."
    return exc.message
