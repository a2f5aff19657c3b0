"""Webhook: our own JSON (docs/destinations/webhook.md), POSTed to the configured URL with the
custom headers, signed Stripe-style when a signing secret is set:

    X-Tracerelay-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>

A batch carries a stable id (``X-Tracerelay-Delivery`` / ``Idempotency-Key`` and the body's
``id``): a retry of the same traces carries the same id, and every trace keeps its own id, so a
receiver can drop duplicates.
"""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

from traces.records import ScoreRecord, TraceRecord

from . import ids
from .answers import check_answer
from .base import CheckResult, Encoded, ExportError, Refused
from .calls import Call, iso, to_json
from .configs import Field
from .transport import HttpExporter

PAYLOAD_VERSION = 1
SIGNATURE_HEADER = "X-Tracerelay-Signature"
DEFAULT_TOLERANCE_S = 300


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The signature header value for ``body``."""
    t = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={digest}"


def verify_signature(
    secret: str, header: str, body: bytes, *, tolerance_s: int = DEFAULT_TOLERANCE_S, now: float | None = None
) -> bool:
    """What a receiver does: recompute the HMAC over ``<t>.<body>``, compare in constant time,
    and refuse timestamps further than ``tolerance_s`` from now (replayed requests)."""
    try:
        parts = dict(item.split("=", 1) for item in header.split(","))
        t = int(parts["t"])
    except (ValueError, KeyError):
        return False
    if abs((time.time() if now is None else now) - t) > tolerance_s:
        return False
    expected = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    candidates = [v for k, v in (item.split("=", 1) for item in header.split(",")) if k == "v1"]
    return any(hmac.compare_digest(expected, c) for c in candidates)


def trace_payload(call: Call) -> dict[str, Any]:
    r = call.record
    return {
        "id": r.trace_id,
        "run_id": r.run,
        "parent_id": r.parent_id or None,
        "kind": r.kind,
        "name": r.name,
        "timestamp": iso(call.start),
        "end_time": iso(call.end),
        "model": r.model,
        "provider": r.provider,
        "status": r.status,
        "error": {"type": call.error_type, "message": call.error_message} if r.is_error else None,
        "prompt_tokens": r.prompt_tokens,
        "completion_tokens": r.completion_tokens,
        "total_tokens": r.total_tokens,
        **r.details.as_dict(),
        "cost": call.cost,
        "cost_currency": "USD",
        "unpriced": r.unpriced,
        "usage_estimated": r.usage_estimated,
        "latency_ms": r.latency_ms,
        "time_to_first_token_ms": r.time_to_first_token_ms,
        "input": r.input,
        "output": r.output,
        "tags": list(call.tags),
        "metadata": call.metadata,
        "environment": r.environment,
        "service_name": r.service_name,
        "session_id": r.session_id,
        "user_id": r.user_id,
        "source": r.source,
    }


def score_payload(score: ScoreRecord) -> dict[str, Any]:
    return {
        "id": score.score_id,
        "trace_id": score.trace_id,
        "run_id": score.run_id,
        "name": score.name,
        "value": score.value,
        "data_type": score.data_type,
        "comment": score.comment,
        "source": score.source,
        "created_at": iso(score.created_at),
    }


class WebhookExporter(HttpExporter):
    platform = "webhook"
    label = "Webhook"
    max_batch = 100
    supports_scores = True
    fields: ClassVar[tuple[Field, ...]] = (
        Field("url", "url", required=True, max_length=2000),
        Field("headers", "headers", default=dict),
        Field(
            "secret",
            secret=True,
            aliases=("signingSecret",),
            pattern=r"[\x21-\x7e]{16,200}",
            pattern_hint="must be 16 to 200 printable characters without spaces",
            help="Signs every request (X-Tracerelay-Signature).",
        ),
    )

    def _headers(self, body: bytes, event: str, delivery_id: str) -> dict[str, str]:
        headers = {
            **dict(self.config.get("headers") or {}),
            "Content-Type": "application/json",
            "X-Tracerelay-Event": event,
            "X-Tracerelay-Delivery": delivery_id,
            "Idempotency-Key": delivery_id,
        }
        if self.config.get("secret"):
            headers[SIGNATURE_HEADER] = sign(str(self.config["secret"]), body)
        return headers

    def encode(self, record: TraceRecord) -> bytes:
        return to_json(trace_payload(Call.of(record, self.target))).encode()

    def export_encoded(self, batch: Sequence[Encoded]) -> Refused | None:
        if not batch:
            return None
        delivery_id = ids.batch_key(batch[0].record.team_id, [e.record.trace_id for e in batch])
        head = {"type": "traces", "version": PAYLOAD_VERSION, "id": delivery_id, "destination": self.target.name}
        # The payload is `head` plus "traces": [trace_payload(call) …], spliced from the encoded traces.
        body = to_json(head).encode()[:-1] + b',"traces":[' + b",".join(e.item for e in batch) + b"]}"
        headers = self._headers(body, "traces", delivery_id)
        response = self.send("POST", str(self.config["url"]), content=body, headers=headers)
        checks = self.config.get("response_validation")
        verdict = check_answer(response, checks, {e.record.trace_id for e in batch})
        if verdict.problem is None:
            return None
        if verdict.items:  # the errors name traces of the batch: only those are refused
            return {
                index: ExportError(f"{self.destination} refused this trace: {verdict.items[e.record.trace_id]}")
                for index, e in enumerate(batch)
                if e.record.trace_id in verdict.items
            }
        # Like a 5xx: retried, then dead-lettered, with the answer as the reason.
        raise ExportError(f"{self.destination} {verdict.problem}", status_code=response.status_code)

    def export_scores(self, scores: Sequence[ScoreRecord]) -> None:
        """A ``score`` event: ``{"type": "score", "version", "id", "destination", "scores": [...]}``."""
        if not scores:
            return
        delivery_id = ids.batch_key(scores[0].team_id, [f"score:{s.score_id}" for s in scores])
        body = to_json(
            {
                "type": "score",
                "version": PAYLOAD_VERSION,
                "id": delivery_id,
                "destination": self.target.name,
                "scores": [score_payload(s) for s in scores],
            }
        ).encode()
        self.send("POST", str(self.config["url"]), content=body, headers=self._headers(body, "score", delivery_id))

    def check(self) -> CheckResult:
        """A ``ping`` event (signed when a secret is set); any 2xx passes."""
        delivery_id = uuid.uuid4().hex
        ping = {"type": "ping", "version": PAYLOAD_VERSION, "id": delivery_id, "destination": self.target.name}
        body = to_json(ping).encode()
        return self.probe(
            "POST",
            str(self.config["url"]),
            content=body,
            headers=self._headers(body, "ping", delivery_id),
            ok_message="The webhook accepted a signed ping."
            if self.config.get("secret")
            else "The webhook accepted an unsigned ping (no signing secret).",
        )
