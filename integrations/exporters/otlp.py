"""Generic OTLP/HTTP exporter (any OpenTelemetry Collector or OTLP backend), and the base of the
OTLP-family exporters (Phoenix, MLflow, Langfuse, Weave), which override the hooks:
`traces_url`, `auth_headers`, `resource_attributes`, `span_attributes`.

Protobuf (``application/x-protobuf``) is the one encoding: every backend we target accepts it,
and Phoenix and Weave accept nothing else. gzip unless the config says ``compression: none``.

Scores go to the OTLP logs endpoint beside the traces one (``…/v1/traces`` → ``…/v1/logs``) as log
records on the trace and span ids their trace was sent with (`otlp_encoding.score_logs`).
"""

from __future__ import annotations

import gzip
import logging
from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

import httpx
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from traces.records import ScoreRecord, TraceRecord

from . import otlp_encoding
from .base import CheckResult, Encoded, ExportError, Refused
from .calls import Call
from .configs import Field
from .transport import HttpExporter

log = logging.getLogger(__name__)
PROTOBUF = "application/x-protobuf"
GZIP_LEVEL = 5  # most of level 9's ratio at a fraction of its CPU


class OtlpExporter(HttpExporter):
    platform = "otlp"
    label = "OTLP endpoint"
    max_batch = 512  # the OTel SDK's default export batch
    supports_scores = True
    fields: ClassVar[tuple[Field, ...]] = (
        Field(
            "endpoint",
            "url",
            required=True,
            aliases=("url",),
            help="The traces URL, e.g. http://collector:4318/v1/traces. A URL with no path gets /v1/traces.",
        ),
        Field("headers", "headers", default=dict, help="Extra headers, e.g. an Authorization or API key header."),
        Field("compression", "choice", default="gzip", choices=("gzip", "none")),
    )

    # --- hooks -----------------------------------------------------------------------------
    def traces_url(self) -> str:
        endpoint = str(self.config["endpoint"])
        if urlsplit(endpoint).path in ("", "/"):
            return endpoint.rstrip("/") + "/v1/traces"
        return endpoint

    def auth_headers(self) -> dict[str, str]:
        return {}

    def resource_attributes(self, call: Call) -> dict[str, Any]:
        return otlp_encoding.default_resource_attributes(call)

    def span_attributes(self, call: Call) -> dict[str, Any]:
        return otlp_encoding.default_span_attributes(call)

    # --- sending ---------------------------------------------------------------------------
    def headers(self) -> dict[str, str]:
        return {**dict(self.config.get("headers") or {}), **self.auth_headers()}

    def encode(self, record: TraceRecord) -> otlp_encoding.EncodedSpan:
        return otlp_encoding.encode_span(
            Call.of(record, self.target),
            resource_attributes=self.resource_attributes,
            span_attributes=self.span_attributes,
        )

    def post_request(self, request: Message, url: str | None = None) -> httpx.Response:
        body = request.SerializeToString()
        headers = {"Content-Type": PROTOBUF, **self.headers()}
        if self.config.get("compression", "gzip") == "gzip":
            body = gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)  # byte-identical re-sends
            headers["Content-Encoding"] = "gzip"
        return self.send("POST", url or self.traces_url(), content=body, headers=headers)

    def logs_url(self) -> str | None:
        """The OTLP logs endpoint beside the traces one: a traces URL's last ``traces`` segment
        becomes ``logs``; None when the traces URL does not end in ``/traces``."""
        parts = urlsplit(self.traces_url())
        if not parts.path.endswith("/traces"):
            return None
        return urlunsplit(parts._replace(path=parts.path[: -len("traces")] + "logs"))

    def export_scores(self, scores: Sequence[ScoreRecord]) -> None:
        """Scores as OTLP log records (`otlp_encoding.score_logs`), one request. A re-send is the
        same records (OTLP has no ids for logs: a collector that keeps duplicates keeps two)."""
        if not scores:
            return
        url = self.logs_url()
        if url is None:
            raise ExportError(
                f"{self.destination}: scores go to the OTLP logs endpoint beside the traces one, and the traces "
                f"URL {self.traces_url()} does not end in /traces, so its logs URL is unknown",
                permanent=True,
            )
        response = self.post_request(otlp_encoding.score_logs(scores), url)
        rejected, message = _partial_success(response, ExportLogsServiceResponse, "rejected_log_records")
        if rejected:
            raise ExportError(
                f"{self.destination} rejected {rejected} of {len(scores)} score log records"
                + (f": {message}" if message else ""),
                permanent=True,
                status_code=response.status_code,
            )

    def export_encoded(self, batch: Sequence[Encoded]) -> Refused | None:
        """Send the batch; an OTLP partial success (HTTP 200 naming ``rejected_spans``, not which) is
        read by one rule (docs/destinations/otlp.md#responses): every span rejected → the batch
        fails for good with the collector's message; some → where a span sent twice is stored once
        (`resend_to_find_refused`), each span is sent again alone to learn which; elsewhere nothing
        is sent again (OTLP asks clients not to) and the batch counts as delivered with
        ``warning`` saying how many spans the collector rejected and why."""
        self.warning = None
        if not batch:
            return None
        request = otlp_encoding.assemble(e.item for e in batch)
        response = self.post_request(request)
        rejected, message = _partial_success(response)
        if not rejected or rejected >= len(batch):
            self.raise_for_partial_success(response, len(batch))
            return None
        if self.resend_to_find_refused:
            return self._find_refused(batch)
        self.warning = (
            f"{self.destination} rejected {rejected} of the {len(batch)} spans of this batch without saying which "
            "(OTLP partial success; not sent again)" + (f": {message}" if message else "")
        )
        log.warning("%s", self.warning)
        return None

    def _find_refused(self, batch: Sequence[Encoded]) -> Refused:
        """A partial success names how many spans were refused, not which: each span is sent again
        alone (stored once by its id at this destination) and its own answer says."""
        refused: Refused = {}
        for index, encoded in enumerate(batch):
            try:
                response = self.post_request(otlp_encoding.assemble([encoded.item]))
                self.raise_for_partial_success(response, 1)
            except ExportError as exc:
                refused[index] = exc
        return refused

    # Whether a partly refused batch may be sent again span by span to learn which spans were
    # refused: only where a span sent twice is stored once (an upsert by span id).
    resend_to_find_refused: ClassVar[bool] = False

    def raise_for_partial_success(self, response: httpx.Response, sent: int) -> None:
        """OTLP's partial success: HTTP 200 that names rejected spans. Retrying cannot help (the
        spec says not to), so it is permanent, and visible rather than silently lost."""
        rejected, message = _partial_success(response)
        if rejected:
            raise ExportError(
                f"{self.destination} rejected {rejected} of {sent} spans" + (f": {message}" if message else ""),
                permanent=True,
                status_code=response.status_code,
            )

    def check(self) -> CheckResult:
        """An empty export request: collectors answer 200 without storing anything."""
        headers = {"Content-Type": PROTOBUF, **self.headers()}
        return self.probe(
            "POST",
            self.traces_url(),
            content=ExportTraceServiceRequest().SerializeToString(),
            headers=headers,
            ok_message="The OTLP endpoint accepted an empty export request.",
        )


def _partial_success(
    response: httpx.Response,
    kind: type[Message] = ExportTraceServiceResponse,
    field: str = "rejected_spans",
) -> tuple[int, str]:
    """An OTLP answer's ``partial_success``: how many items it rejected (``field``: spans or log
    records), and its error message; (0, "") when it names none."""
    camel = "".join(w.capitalize() if i else w for i, w in enumerate(field.split("_")))
    content_type = response.headers.get("content-type", "")
    if not response.content:
        return 0, ""
    if "json" in content_type:
        try:
            body = response.json()
        except ValueError:
            return 0, ""
        partial = (body.get("partialSuccess") or body.get("partial_success")) if isinstance(body, dict) else None
        if not isinstance(partial, dict):
            return 0, ""
        rejected = partial.get(camel, partial.get(field, 0))
        message = partial.get("errorMessage", partial.get("error_message", ""))
        try:
            return int(rejected or 0), str(message or "")
        except (TypeError, ValueError):
            return 0, ""
    if "protobuf" in content_type:
        parsed = kind()
        try:
            parsed.ParseFromString(response.content)
        except DecodeError:
            return 0, ""
        partial_success = getattr(parsed, "partial_success")  # noqa: B009 - the field of either response
        return int(getattr(partial_success, field)), partial_success.error_message
    return 0, ""
