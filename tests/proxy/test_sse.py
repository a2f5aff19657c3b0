"""The usage filter (hot path) and the SSE parser (writer)."""

from __future__ import annotations

import orjson

from traces.proxy.sse import UsageFilter, parse_events

HEAD = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
WORDS = ["Hel", "lo", " wo", "rld"]


def _stream(include_usage: bool, newline: bytes = b"\n") -> bytes:
    extra = {"usage": None} if include_usage else {}
    events = [{**HEAD, "choices": [{"index": 0, "delta": {"content": w}}], **extra} for w in WORDS]
    if include_usage:
        events.append({**HEAD, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}})
    lines = [b"data: " + orjson.dumps(e) + newline + newline for e in events]
    return b"".join(lines) + b"data: [DONE]" + newline + newline


def _filtered(chunks: list[bytes]) -> bytes:
    usage_filter = UsageFilter()
    return b"".join(usage_filter.feed(c) for c in chunks) + usage_filter.flush()


def test_it_turns_an_injected_stream_into_the_plain_one_however_it_is_split():
    injected, plain = _stream(True), _stream(False)
    assert _filtered([injected]) == plain
    for cut in range(1, len(injected)):
        assert _filtered([injected[:cut], injected[cut:]]) == plain
    assert _filtered([injected[i : i + 7] for i in range(0, len(injected), 7)]) == plain


def test_it_handles_crlf_events():
    assert _filtered([_stream(True, b"\r\n")]) == _stream(False, b"\r\n")


def test_it_forwards_each_complete_event_at_once():
    usage_filter = UsageFilter()
    first = _stream(False).split(b"\n\n")[0] + b"\n\n"
    assert usage_filter.feed(first + b"data: {") == first  # only the incomplete rest waits


def test_a_usage_chunk_that_also_carries_content_is_kept():
    event = b"data: " + orjson.dumps({**HEAD, "choices": [{"index": 0, "delta": {}}], "usage": {"a": 1}}) + b"\n\n"
    assert _filtered([event]) == event


def test_what_trails_the_last_event_is_passed_on_at_the_end():
    assert _filtered([b'data: {"a":1}\n\ndata: {"unfinished']) == b'data: {"a":1}\n\ndata: {"unfinished'


def test_the_parser_reads_names_multiline_data_and_skips_comments():
    raw = b': keep-alive\n\nevent: message_start\ndata: {"a":\ndata: 1}\n\ndata: [DONE]\r\n\r\ndata: tail'
    assert list(parse_events(raw)) == [("message_start", b'{"a":\n1}'), ("", b"[DONE]"), ("", b"tail")]
