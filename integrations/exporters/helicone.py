"""Helicone: its custom-log endpoint ``POST {endpoint}/custom/v1/log``, one request per trace,
``Authorization: Bearer <key>``.

The body is the request (OpenAI chat shape), the response (OpenAI completion shape with
``usage``, from which Helicone counts tokens and prices the call) and the timing. User, session,
tags and metadata travel as Helicone headers inside ``providerRequest.meta``; the request id is
our UUIDv5, so Helicone keys the log by a stable id. Helicone reports a failed storage step as
HTTP 200 with ``{"error": …}``: that is a retryable failure here, not a success.

Scores go to Helicone's REST API, ``POST {apiUrl}/v1/request/{request id}/score`` with
``{"scores": {"<name>": <integer or boolean>}}``, on the request id the log was sent with. Helicone
stores score values as integers (booleans as 1/0, typed boolean): a numeric score that is not a whole
number is rounded to the nearest integer (halves away from zero), and the delivery is recorded with a
warning naming both values. Helicone's scores take no text, so a categorical score is refused for
good (dead, with the reason), and so is a score on a structural span (an agent or tool span, which
Helicone never logged). Helicone keeps one value per (request, name): a re-send overwrites, never
duplicates. A score named ``helicone-score-feedback`` (through ``score_mappings``) is Helicone's own
thumbs up/down feedback on the request.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar

from traces.kinds import CALL_KINDS
from traces.records import ScoreRecord, TraceRecord

from . import ids
from .base import CheckResult, Encoded, ExportError
from .calls import Call, since_1970_ns, to_json
from .configs import Field
from .transport import HttpExporter

_PROPERTY_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def property_header(name: str) -> str:
    return "Helicone-Property-" + (_PROPERTY_NAME.sub("-", name).strip("-") or "property")


def _header_value(value: Any) -> str:
    text = value if isinstance(value, str) else to_json(value)
    return " ".join(text.split())[:1000]


def _timing(moment: datetime) -> dict[str, int]:
    ms = since_1970_ns(moment, "Helicone") // 1_000_000
    return {"seconds": ms // 1000, "milliseconds": ms % 1000}


def log_for(call: Call) -> dict[str, Any]:
    r = call.record
    meta: dict[str, str] = {"Helicone-Request-Id": str(call.run_id)}
    if r.user_id:
        meta["Helicone-User-Id"] = _header_value(r.user_id)
    in_run = r.run != r.trace_id or bool(r.parent_id)
    if r.session_id or in_run:
        # A call of a run without a session of its own is grouped by its run: Helicone's sessions
        # are its only grouping of logs.
        meta["Helicone-Session-Id"] = _header_value(r.session_id or r.run)
        meta["Helicone-Session-Path"] = "/"
        meta["Helicone-Session-Name"] = _header_value(r.service_name or "tracerelay")
    if in_run:
        meta[property_header("Tracerelay-Run-Id")] = _header_value(r.run)
    if call.tags:
        meta[property_header("Tags")] = _header_value(",".join(call.tags))
    if r.environment:
        meta[property_header("Environment")] = _header_value(r.environment)
    if r.service_name:
        meta[property_header("Service")] = _header_value(r.service_name)
    meta[property_header("Tracerelay-Trace-Id")] = r.trace_id
    for key, value in call.metadata.items():
        meta.setdefault(property_header(key), _header_value(value))

    request_json: dict[str, Any] = {
        "model": r.model,
        "messages": [m.as_openai() for m in call.inputs],
        **call.parameters,
    }
    usage: dict[str, Any] = {
        "prompt_tokens": r.prompt_tokens,
        "completion_tokens": r.completion_tokens,
        "total_tokens": r.total_tokens,
    }
    # OpenAI's usage details, as the logged response would have carried them.
    if r.cached_tokens or r.input_audio_tokens:
        usage["prompt_tokens_details"] = {"cached_tokens": r.cached_tokens, "audio_tokens": r.input_audio_tokens}
    if r.reasoning_tokens or r.output_audio_tokens:
        usage["completion_tokens_details"] = {
            "reasoning_tokens": r.reasoning_tokens,
            "audio_tokens": r.output_audio_tokens,
        }
    if r.is_error:
        response_json: dict[str, Any] = {
            "error": {"message": call.error_message, "type": call.error_type, "code": call.http_status}
        }
        if r.prompt_tokens or r.completion_tokens:
            response_json["usage"] = usage
    else:
        response_json = {
            "id": f"chatcmpl-{call.run_id.hex}",
            "object": "chat.completion",
            "created": int(call.end.timestamp()),
            "model": r.model,
            "choices": [
                {"index": i, "message": m.as_openai(), "finish_reason": m.finish_reason or "stop"}
                for i, m in enumerate(call.outputs)
            ],
            "usage": usage,
        }
    timing: dict[str, Any] = {"startTime": _timing(call.start), "endTime": _timing(call.end)}
    if r.time_to_first_token_ms is not None:
        timing["timeToFirstToken"] = r.time_to_first_token_ms
    return {
        "providerRequest": {"url": "custom-model-nopath", "json": request_json, "meta": meta},
        "providerResponse": {"headers": {}, "status": call.http_status, "json": response_json},
        "timing": timing,
    }


# Helicone keeps score values in a 64-bit integer column.
SCORE_MAX = 2**63 - 1


def helicone_score_value(score: ScoreRecord) -> tuple[int | bool, str | None]:
    """The value Helicone can store for this score, and a note when it is not the score's own value;
    `ExportError` (permanent) when Helicone cannot store it at all."""
    if score.trace_kind and score.trace_kind not in CALL_KINDS:
        raise ExportError(
            f"Helicone logs LLM requests only: the score {score.name!r} is on a span of kind {score.trace_kind!r}, "
            "which Helicone never received",
            permanent=True,
        )
    if score.data_type == "boolean" or isinstance(score.value, bool):
        return bool(score.value), None
    if score.data_type != "numeric" or not isinstance(score.value, (int, float)):
        raise ExportError(
            f"Helicone scores take numbers and booleans only; the categorical score {score.name!r} "
            f"({score.value!r}) is not sent",
            permanent=True,
        )
    value = score.value
    if isinstance(value, float) and not math.isfinite(value):
        raise ExportError(f"Helicone cannot store the score {score.name!r}: {value!r} is not finite", permanent=True)
    whole = int(value) if float(value).is_integer() else int(math.copysign(math.floor(abs(value) + 0.5), value))
    if abs(whole) > SCORE_MAX:
        raise ExportError(
            f"Helicone cannot store the score {score.name!r}: {value!r} is beyond its 64-bit integers",
            permanent=True,
        )
    if whole == value:
        return whole, None
    return whole, f"Helicone takes integer scores: {score.name!r} {value!r} was sent as {whole}"


class HeliconeExporter(HttpExporter):
    platform = "helicone"
    label = "Helicone"
    supports_scores = True
    # One log per request, and Helicone does not deduplicate re-sent logs: a batch of one means a
    # failure never makes us re-send logs that already got through.
    max_batch = 1
    fields: ClassVar[tuple[Field, ...]] = (
        Field("apiKey", required=True, secret=True, max_length=200),
        Field(
            "endpoint",
            "base_url",
            default="https://api.worker.helicone.ai",
            aliases=("host",),
            help="The logging host; self-hosted: your worker's URL.",
        ),
        Field(
            "apiUrl",
            "base_url",
            default="https://api.helicone.ai",
            help="Helicone's REST API (EU: https://eu.api.helicone.ai): scores and the connection test.",
        ),
    )

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.config['apiKey']}"}

    def encode(self, record: TraceRecord) -> bytes | None:
        """A call's log; None for a structural span (Helicone logs LLM requests only: such a span,
        sent here because its run's calls are, is delivered with nothing to send)."""
        if not record.is_call:
            return None
        return to_json(log_for(Call.of(record, self.target))).encode()

    def export_encoded(self, batch: Sequence[Encoded]) -> None:
        for encoded in batch:
            if encoded.item is None:
                continue
            self._post_stored(f"{self.config['endpoint']}/custom/v1/log", encoded.item, "log")

    def export_scores(self, scores: Sequence[ScoreRecord]) -> None:
        """One ``POST /v1/request/{id}/score`` per score, on the request id the trace was logged
        with; a rounded value is noted in ``warning``."""
        self.warning = None
        notes: list[str] = []
        for score in scores:
            value, note = helicone_score_value(score)
            request_id = ids.run_uuid(score.team_id, score.trace_id)
            body = to_json({"scores": {score.name: value}}).encode()
            self._post_stored(f"{self.config['apiUrl']}/v1/request/{request_id}/score", body, "score")
            if note:
                notes.append(note)
        self.warning = "; ".join(notes) or None

    def _post_stored(self, url: str, content: bytes, what: str) -> None:
        """POST a JSON body; a success status whose body reports an error (Helicone answers some refusals so)
        is a temporary failure."""
        response = self.send(
            "POST", url, content=content, headers={**self.headers(), "Content-Type": "application/json"}
        )
        error = _body_error(response.content)
        if error is not None:
            raise ExportError(
                f"{self.destination} answered {response.status_code} but did not store the {what}: {error}",
                permanent=False,
                status_code=response.status_code,
            )

    def check(self) -> CheckResult:
        """A one-row request query on Helicone's REST API: the key, nothing written."""
        return self.probe(
            "POST",
            f"{self.config['apiUrl']}/v1/request/query",
            json={"filter": "all", "limit": 1, "offset": 0},
            headers=self.headers(),
            ok_message="Helicone accepted the API key.",
        )


def _body_error(content: bytes) -> str | None:
    """Helicone's success body is the text ``ok``; a JSON object with ``error`` is a failure."""
    text = content.strip()
    if not text.startswith(b"{"):
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if isinstance(body, dict) and body.get("error"):
        error = body["error"]
        return error if isinstance(error, str) else to_json(error)[:300]
    return None
