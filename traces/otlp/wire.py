"""The OTLP/HTTP wire: reading a request body and writing the responses the OTLP spec prescribes.

OTLP clients parse `google.rpc.Status` error bodies (and `ExportTraceServiceResponse` success
bodies) in the encoding they sent, so this endpoint answers in that encoding rather than with the
API's problem+json (docs/otlp.md, "Responses").
"""

from __future__ import annotations

import base64
import binascii
from typing import IO, Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from config.jsonbody import check_content_encoding, check_declared_length, compressed_limit, gunzip, read_capped
from config.problems import Problem

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

# HTTP status → the gRPC code its Status body carries (the OTLP spec pairs them this way).
GRPC_CODES = {
    400: code_pb2.INVALID_ARGUMENT,
    401: code_pb2.UNAUTHENTICATED,
    403: code_pb2.PERMISSION_DENIED,
    405: code_pb2.UNIMPLEMENTED,
    413: code_pb2.RESOURCE_EXHAUSTED,
    415: code_pb2.INVALID_ARGUMENT,
    429: code_pb2.RESOURCE_EXHAUSTED,
    500: code_pb2.INTERNAL,
    503: code_pb2.UNAVAILABLE,
}


class OtlpError(Exception):
    """An error answer: HTTP ``status`` with a `google.rpc.Status` body saying ``message``."""

    def __init__(self, status: int, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


def media_type(content_type: str) -> str:
    """`application/x-protobuf` or `application/json`; 415 for anything else."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media not in (PROTOBUF, JSON):
        shown = f"'{media[:100]}'" if media else "none"
        raise OtlpError(415, f"Content-Type must be {PROTOBUF} or {JSON} (got {shown}).")
    return media


def read_body(stream: IO[bytes], *, encoding: str, content_length: str | None, limit: int) -> bytes:
    """The request body, gunzipped, with ``limit`` on the decompressed size (413 past it).

    The reading and gunzipping are the API's own (`config.jsonbody`: a gzip bomb costs at most
    ``limit`` bytes of output before it is refused); only the answer's form differs here.
    """
    what = "The request body"
    try:
        coding = check_content_encoding(encoding)
        read_limit = compressed_limit(limit) if coding else limit
        check_declared_length(content_length, read_limit, what)
        raw = read_capped(stream, read_limit, what)
        return gunzip(raw, limit, what) if coding and raw else raw
    except Problem as exc:
        raise OtlpError(exc.status_code, str(exc.detail))


def parse_request(body: bytes, media: str) -> ExportTraceServiceRequest:
    """An `ExportTraceServiceRequest` from protobuf or OTLP JSON; 400 when it cannot be decoded."""
    request = ExportTraceServiceRequest()
    if media == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, RecursionError) as exc:
            raise OtlpError(400, f"The body is not a valid ExportTraceServiceRequest: {exc or 'bad protobuf'}.")
        return request
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise OtlpError(400, f"The body is not valid JSON: {exc}.")
    if not isinstance(data, dict):
        raise OtlpError(400, "The body must be a JSON object (an ExportTraceServiceRequest).")
    try:
        _hex_ids_to_base64(data)
        json_format.ParseDict(data, request, ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise OtlpError(400, f"The body is not a valid OTLP JSON ExportTraceServiceRequest: {str(exc)[:300]}")
    return request


_ID_FIELDS = ("traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id")


def _hex_ids_to_base64(data: dict[str, Any]) -> None:
    """OTLP JSON writes ids in hex where proto3 JSON has base64 (the spec's one deviation, with
    integer enums): rewrite them so `json_format` reads them. Ids that are not hex become empty
    and the span is refused for it, with the others stored."""
    for resource_spans in _list(data, "resourceSpans", "resource_spans"):
        for scope_spans in _list(resource_spans, "scopeSpans", "scope_spans"):
            for span in _list(scope_spans, "spans"):
                _fix_ids(span)
                for link in _list(span, "links"):
                    _fix_ids(link)


def _list(obj: Any, *names: str) -> list[Any]:
    if not isinstance(obj, dict):
        return []
    for name in names:
        value = obj.get(name)
        if isinstance(value, list):
            return value
    return []


def _fix_ids(obj: Any) -> None:
    if not isinstance(obj, dict):
        return
    for name in _ID_FIELDS:
        value = obj.get(name)
        if isinstance(value, str):
            try:
                raw = bytes.fromhex(value)
            except ValueError:
                raw = b""
            obj[name] = base64.b64encode(raw).decode()


def success_body(media: str, rejected: int, message: str) -> bytes:
    """`ExportTraceServiceResponse`, with `partial_success` only when spans were refused."""
    response = ExportTraceServiceResponse()
    if rejected:
        response.partial_success.CopyFrom(ExportTracePartialSuccess(rejected_spans=rejected, error_message=message))
    return _encode(response, media)


def status_body(media: str, status: int, message: str) -> bytes:
    return _encode(status_pb2.Status(code=GRPC_CODES.get(status, code_pb2.UNKNOWN), message=message), media)


def _encode(message: Any, media: str) -> bytes:
    if media == PROTOBUF:
        return bytes(message.SerializeToString())
    return orjson.dumps(json_format.MessageToDict(message))


def hex_id(raw: bytes) -> str:
    return binascii.hexlify(raw).decode()
