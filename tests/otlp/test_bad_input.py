"""Bodies the endpoint must refuse whole, with the OTLP spec's status and a `google.rpc.Status` body."""

from __future__ import annotations

import gzip
import io
from typing import Any

import orjson
import pytest
from google.rpc import code_pb2, status_pb2

from traces.models import Trace
from traces.otlp.wire import OtlpError, read_body

from .builders import JSON, PATH, PROTOBUF, export_request, gz, llm_span, otlp_json, protobuf


def post(client: Any, body: bytes, content_type: str = PROTOBUF, **headers: str) -> Any:
    return client.post(PATH, data=body, content_type=content_type, headers=headers)


def status_of(r: Any) -> status_pb2.Status:
    if r["Content-Type"] == PROTOBUF:
        return status_pb2.Status.FromString(r.content)
    assert r["Content-Type"] == JSON
    data = r.json()
    return status_pb2.Status(code=data.get("code", 0), message=data.get("message", ""))


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"\xff\xff\xff\xff\xff\xff", id="garbage"),
        pytest.param(b"\x0a\xff\xff\xff\x0f", id="length-past-the-end"),
        pytest.param(protobuf(llm_span())[:-3], id="truncated"),
        pytest.param(b"\x0a\x02\x0a\x00" * 3 + b"\x07", id="bad-wire-type"),
    ],
)
def test_garbage_protobuf_is_400(api, body: bytes) -> None:
    r = post(api, body)
    assert r.status_code == 400 and r["Content-Type"] == PROTOBUF
    assert status_of(r).code == code_pb2.INVALID_ARGUMENT
    assert not Trace.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"{not json", id="malformed"),
        pytest.param(b"[1, 2]", id="not-an-object"),
        pytest.param(orjson.dumps({"resourceSpans": "nope"}), id="wrong-type-list"),
        pytest.param(
            orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 5, "startTimeUnixNano": "x"}]}]}]}),
            id="wrong-field-types",
        ),
        pytest.param(
            orjson.dumps(
                {
                    "resourceSpans": [
                        {"scopeSpans": [{"spans": [{"attributes": [{"key": "a", "value": {"intValue": "1x"}}]}]}]}
                    ]
                }
            ),
            id="bad-int64",
        ),
    ],
)
def test_bad_json_is_400_in_json(api, body: bytes) -> None:
    r = post(api, body, JSON)
    assert r.status_code == 400 and r["Content-Type"] == JSON
    status = status_of(r)
    assert status.code == code_pb2.INVALID_ARGUMENT and status.message
    assert not Trace.objects.exists()


def test_unknown_json_fields_are_ignored(api) -> None:
    body = otlp_json(export_request(llm_span()))
    body["futureField"] = {"x": 1}
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["newThing"] = 3
    assert post(api, orjson.dumps(body), JSON).status_code == 200


def test_a_body_over_the_limit_is_413(api, settings) -> None:
    settings.OTLP_MAX_BYTES = 2000
    big = llm_span(attrs={"gen_ai.input.messages": "x" * 5000})
    r = post(api, protobuf(big))
    assert r.status_code == 413 and status_of(r).code == code_pb2.RESOURCE_EXHAUSTED


def test_a_gzip_bomb_is_413_without_inflating_it(api, settings) -> None:
    settings.OTLP_MAX_BYTES = 1024 * 1024
    bomb = gzip.compress(b"\0" * (16 * 1024 * 1024), compresslevel=1)  # 16 MiB in ~70 KiB
    assert len(bomb) < settings.OTLP_MAX_BYTES
    r = post(api, bomb, PROTOBUF, content_encoding="gzip")
    assert r.status_code == 413


def test_read_body_never_inflates_past_the_limit() -> None:
    bomb = gzip.compress(b"\0" * (8 * 1024 * 1024), compresslevel=1)
    with pytest.raises(OtlpError) as caught:
        read_body(io.BytesIO(bomb), encoding="gzip", content_length=None, limit=100_000)
    assert caught.value.status == 413
    exact = read_body(io.BytesIO(gz(b"a" * 100_000)), encoding="gzip", content_length=None, limit=100_000)
    assert exact == b"a" * 100_000


def test_a_declared_length_over_the_limit_is_413_before_reading() -> None:
    with pytest.raises(OtlpError) as caught:
        read_body(io.BytesIO(b""), encoding="", content_length="2000", limit=1000)
    assert caught.value.status == 413


@pytest.mark.parametrize("body", [b"not gzip at all", gz(b"x" * 1000)[:-10]], ids=["not-gzip", "truncated"])
def test_bad_gzip_is_400(api, body: bytes) -> None:
    r = post(api, body, PROTOBUF, content_encoding="gzip")
    assert r.status_code == 400 and "gzip" in status_of(r).message


def test_an_unsupported_content_encoding_is_415(api) -> None:
    r = post(api, protobuf(llm_span()), PROTOBUF, content_encoding="br")
    assert r.status_code == 415 and status_of(r).code == code_pb2.INVALID_ARGUMENT


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/protobuf", "application/grpc", "application/octet-stream"]
)
def test_other_content_types_are_415_in_json(api, content_type: str) -> None:
    r = post(api, protobuf(llm_span()), content_type)
    assert r.status_code == 415 and r["Content-Type"] == JSON
    assert "application/x-protobuf" in status_of(r).message


def test_json_with_a_charset_is_json(api) -> None:
    r = post(api, orjson.dumps(otlp_json(export_request(llm_span()))), "application/json; charset=utf-8")
    assert r.status_code == 200
