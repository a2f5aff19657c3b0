"""What debug mode records: how routing evaluated each trace, and each exporter call carrying it.

Both hooks cost one `state.active(team)` check when debug mode is off:

* `record_routing` is the `traces.signals.traces_stored` receiver. For a team in debug mode it runs
  the router again with ``explain=True`` (the dry run's explanation: each rule matched or not and
  why, the sampling policy, conditions that failed) on the trace as stored, beside the decisions
  ingest stored (kept, sampled out and why, the fallback chain of each destination).
* `export_recorded` is what the delivery engine calls instead of ``exporter.export_encoded(batch)`` for a
  team in debug mode: the exporter's HTTP client is wrapped for that call, so every request and
  response is recorded (masked: `masking.py`) with its duration, and the outcome after it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
from django.utils import timezone

from integrations.exporters.base import Exporter
from routing.router import route
from routing.selectors import compiled_routing
from traces.records import TraceRecord

from . import state
from .masking import BODY_MAX_CHARS, RESPONSE_MAX_CHARS, Masker, secret_values
from .models import DebugRecord, RecordKind

log = logging.getLogger(__name__)

MAX_EXCHANGES = 20  # requests recorded per exporter call (an exporter may page or retry inside)


# --- Routing ------------------------------------------------------------------------------------


def record_routing(sender: Any = None, rows: Sequence[Any] = (), **kwargs: Any) -> None:
    """`traces_stored` receiver: a routing record per new trace of a team in debug mode."""
    teams = {row.team_id for row in rows}
    on = {team for team in teams if state.active(team)}
    if not on:
        return
    records = []
    compiled: dict[int, Any] = {}
    for row in rows:
        if row.team_id not in on:
            continue
        routing = compiled.get(row.team_id)
        if routing is None:
            routing = compiled[row.team_id] = compiled_routing(row.team_id)
        records.append(
            DebugRecord(team_id=row.team_id, trace_id=row.pk, kind=RecordKind.ROUTING, data=routing_data(row, routing))
        )
    DebugRecord.objects.bulk_create(records)


def routing_data(row: Any, routing: Any) -> dict[str, Any]:
    result = route(TraceRecord.from_trace(row).condition_context(), routing, explain=True)
    fallbacks = {d.destination.name: [f.name for f in d.destination.fallback] for d in result.decisions}
    return {
        "rules_version": routing.version,
        "sampling_version": routing.sampling_version,
        "sample_point": result.sample_point,
        "policy": {"rate": result.policy_rate, "reason": result.policy_reason},
        "evaluations": [e.as_dict() for e in result.evaluations],
        # What ingest decided and stored (the explanation above is the same evaluation, re-run).
        "decisions": [{**d, "fallback": fallbacks.get(d.get("destination"), [])} for d in row.routing or ()],
        "errors": [{"rule": rule, "error": error} for rule, error in result.errors],
    }


# --- Exporter calls -----------------------------------------------------------------------------


class RecordingClient:
    """An `httpx.Client` stand-in for one export call: sends through the real client and records
    each request and response, masked. Anything else is the real client's."""

    def __init__(self, client: httpx.Client, masker: Masker) -> None:
        self._client = client
        self._masker = masker
        self.exchanges: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def request(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        auth: Any = httpx.USE_CLIENT_DEFAULT,
        follow_redirects: Any = httpx.USE_CLIENT_DEFAULT,
        **kwargs: Any,
    ) -> httpx.Response:
        request = self._client.build_request(method, url, **kwargs)
        return self.send(request, auth=auth, follow_redirects=follow_redirects)

    def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        started = time.perf_counter()
        try:
            response = self._client.send(request, **kwargs)
        except Exception as exc:
            self._record(request, None, started, f"{type(exc).__name__}: {exc}")
            raise
        self._record(request, response, started, None)
        return response

    def _record(
        self, request: httpx.Request, response: httpx.Response | None, started: float, error: str | None
    ) -> None:
        if len(self.exchanges) >= MAX_EXCHANGES:
            return
        mask = self._masker
        entry: dict[str, Any] = {
            "method": request.method,
            "url": mask.url(str(request.url)),
            "request_headers": mask.headers(_raw(request.headers)),
            "request_body": mask.body(_content(request), request.headers, BODY_MAX_CHARS),
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        }
        if response is not None:
            entry["status"] = response.status_code
            entry["response_headers"] = mask.headers(_raw(response.headers))
            entry["response_body"] = mask.body(response.content, response.headers, RESPONSE_MAX_CHARS)
        if error is not None:
            entry["error"] = mask.text(error)
        self.exchanges.append(entry)


def _raw(headers: httpx.Headers) -> list[tuple[str, str]]:
    """Header names as sent (httpx's own view of them is lower-cased)."""
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in headers.raw]


def _content(request: httpx.Request) -> bytes:
    try:
        return request.content
    except httpx.RequestNotRead:  # a streamed body: not recorded rather than consumed
        return b""


def export_recorded(exporter: Exporter, batch: Sequence[Any], rows: Sequence[Mapping[str, Any]]) -> Any:
    """``exporter.export_encoded(batch)`` with its HTTP exchanges recorded, one export record per
    row (trace) sent; the exporter's exception, if any, is recorded and raised again unchanged, and
    what it returns (the items refused) is returned."""
    masker = Masker(secret_values(exporter.target.config, exporter.secret_fields))
    client = exporter.client
    recorder = RecordingClient(client, masker)
    exporter.client = recorder  # type: ignore[assignment]
    started = time.perf_counter()
    outcome: dict[str, Any] = {"ok": True}
    try:
        refused = exporter.export_encoded(batch)
        if refused:
            outcome["refused"] = {str(i): masker.text(error.message) for i, error in refused.items()}
        return refused
    except BaseException as exc:
        outcome = {
            "ok": False,
            "error": masker.text(str(getattr(exc, "message", "") or exc or type(exc).__name__)),
            "permanent": getattr(exc, "permanent", None),
            "status": getattr(exc, "status_code", None),
            "retry_after_s": getattr(exc, "retry_after", None),
        }
        raise
    finally:
        exporter.client = client
        outcome["duration_ms"] = round((time.perf_counter() - started) * 1000, 1)
        try:
            _write_export(exporter, rows, len(batch), recorder.exchanges, outcome)
        except Exception:  # recording must never change what delivery does
            log.exception("debug mode: could not write the export records")


def _write_export(
    exporter: Exporter,
    rows: Sequence[Mapping[str, Any]],
    batch: int,
    exchanges: list[dict[str, Any]],
    outcome: dict[str, Any],
) -> None:
    now = timezone.now()
    target = exporter.target
    records = []
    for row in rows:
        spec = row.get("spec") or {}
        fallback = [f.get("name") for f in spec.get("fallback") or () if isinstance(f, Mapping)]
        data = {
            "destination": row["destination"],
            "platform": target.platform,
            "rule": row.get("rule_name") or "",
            "attempt": row.get("attempts"),
            "batch_size": batch,
            "outcome": outcome,
            "fallback": fallback,
            "exchanges": exchanges,
        }
        records.append(
            DebugRecord(
                team_id=row["team_id"],
                trace_id=row["trace_id"],
                kind=RecordKind.EXPORT,
                destination=row["destination"],
                created_at=now,
                data=data,
            )
        )
    DebugRecord.objects.bulk_create(records)
