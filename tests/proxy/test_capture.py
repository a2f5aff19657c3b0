"""From what the hot path recorded to the trace dict: the less common shapes."""

from __future__ import annotations

import gzip
import time
import zlib

import orjson

from accounts.principals import KeyPrincipal
from traces.proxy.capture import PARSE_LIMIT, Capture, StreamBody, build_trace
from traces.proxy.upstreams import ResolvedUpstream

PRINCIPAL = KeyPrincipal(1, 1, "production", "tr_prod_abc", frozenset({"proxy"}))
GROQ = ResolvedUpstream("groq", "openai", "https://api.groq.com/openai/v1", "groq")
CLAUDE = ResolvedUpstream("anthropic", "anthropic", "https://api.anthropic.com", "anthropic")


def _capture(target: ResolvedUpstream = GROQ, path: str = "chat/completions", request: object = None) -> Capture:
    capture = Capture("trc_test", PRINCIPAL, target, "POST", path)
    capture.started = time.time()
    capture.request_body = orjson.dumps(request or {"model": "llama-3.1-8b-instant", "messages": []})
    capture.status_code = 200
    capture.latency_ms = 3.0
    return capture


def _streamed(capture: Capture, events: list[bytes]) -> Capture:
    body = StreamBody()
    for event in events:
        body.append(event)
    capture.response_body = body
    return capture


def _build(capture: Capture, metadata_keys: int = 64) -> dict:
    return build_trace(capture, max_body=256 * 1024, max_metadata_keys=metadata_keys)


def test_groq_usage_in_x_groq_is_read():
    chunk = {"model": "llama", "choices": [], "x_groq": {"usage": {"prompt_tokens": 11, "completion_tokens": 5}}}
    trace = _build(_streamed(_capture(), [b"data: " + orjson.dumps(chunk) + b"\n\n", b"data: [DONE]\n\n"]))
    assert (trace["prompt_tokens"], trace["completion_tokens"]) == (11, 5)


def test_an_error_event_in_a_stream_makes_the_trace_an_error():
    error = {"error": {"type": "server_error", "message": "overloaded"}}
    trace = _build(_streamed(_capture(), [b"data: " + orjson.dumps(error) + b"\n\n"]))
    assert trace["status"] == "error"
    assert trace["error"] == {"type": "server_error", "message": "overloaded"}


def test_an_anthropic_stream_error_and_tool_use_are_read():
    events = [
        (b"message_start", {"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 3}}}),
        (
            b"content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
            },
        ),
        (
            b"content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"x": '},
            },
        ),
        (
            b"content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "1}"}},
        ),
        (b"error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]
    raw = [b"event: " + name + b"\ndata: " + orjson.dumps(data) + b"\n\n" for name, data in events]
    trace = _build(_streamed(_capture(CLAUDE, "v1/messages", {"model": "claude"}), raw))
    assert trace["status"] == "error" and trace["error"]["type"] == "overloaded_error"
    assert trace["output"]["content"][0]["input"] == {"x": 1}
    assert trace["prompt_tokens"] == 3


def test_gzip_and_deflate_answers_are_decoded():
    answer = orjson.dumps({"model": "m", "choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 1}})
    for encoding, data in ((b"gzip", gzip.compress(answer)), (b"deflate", zlib.compress(answer))):
        capture = _capture()
        capture.response_headers = [(b"Content-Encoding", encoding)]
        capture.response_body = data
        assert _build(capture)["prompt_tokens"] == 2


def test_an_encoding_we_cannot_read_still_gives_a_trace():
    capture = _capture()
    capture.response_headers = [(b"content-encoding", b"br")]
    capture.response_body = b"\x8b\x02\x80"
    trace = _build(capture)
    assert trace["status"] == "success" and "prompt_tokens" not in trace  # the pipeline estimates, and says so


def test_a_body_too_big_to_parse_gives_model_and_usage_from_its_ends():
    vectors = b",".join(b'{"object":"embedding","embedding":[' + b"0.1," * 2000 + b"0.1]}" for _ in range(600))
    body = b'{"object":"list","data":[' + vectors + b'],"model":"text-embedding-3-large",'
    body += b'"usage":{"prompt_tokens":900,"total_tokens":900}}'
    assert len(body) > PARSE_LIMIT
    capture = _capture(path="embeddings", request={"model": "text-embedding-3-large", "input": ["x"]})
    capture.response_body = body
    trace = _build(capture)
    assert trace["model"] == "text-embedding-3-large"
    assert (trace["prompt_tokens"], trace["completion_tokens"]) == (900, 0)
    assert trace["output"] == {"truncated": True, "bytes": len(body)}


def test_big_and_non_json_requests_are_summarised():
    big = _capture(request={"model": "m", "messages": [{"role": "user", "content": "x" * 300_000}]})
    trace = _build(big)
    assert trace["input"]["truncated"] is True and trace["input"]["bytes"] == len(big.request_body)
    assert trace["input"]["preview"].startswith('{"model":"m"')

    upload = _capture(path="audio/transcriptions")
    upload.request_body, upload.request_type = b"--boundary\r\n...", b"multipart/form-data; boundary=boundary"
    trace = _build(upload)
    assert trace["input"] == {"content_type": "multipart/form-data; boundary=boundary", "bytes": 15}


def test_the_proxys_own_metadata_always_wins_and_always_fits():
    capture = _capture()
    capture.status_code = 429
    capture.metadata = {"proxy": {"upstream": "forged"}, "rate_limit": "forged", **{f"k{i}": i for i in range(70)}}
    metadata = _build(capture)["metadata"]
    assert len(metadata) == 64
    assert metadata["proxy"]["upstream"] == GROQ.name and metadata["proxy"]["status_code"] == 429
    assert metadata["rate_limit"] != "forged"
    capture.status_code = 200
    capture.metadata = {"env": "prod"}
    assert _build(capture)["metadata"]["env"] == "prod"


def test_a_long_stream_keeps_its_start_and_its_usage():
    head = [b'data: {"model":"m","choices":[{"index":0,"delta":{"content":"' + b"x" * 1000 + b'"}}]}\n\n'] * 3000
    tail = [b'data: {"model":"m","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":3000}}\n\n']
    trace = _build(_streamed(_capture(), head + tail))
    assert trace["completion_tokens"] == 3000
    assert trace["output"]["truncated"] is True
    assert '"content":"xxx' in trace["output"]["preview"]  # the partial message, cut to the size limit
