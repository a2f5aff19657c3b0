"""A fake OpenAI + Anthropic server on loopback, deterministic so direct and proxied bytes can be compared.

OpenAI-style routes live under ``/v1``, Anthropic's under ``/anthropic/v1``. The model name picks
the scenario:

- anything ordinary: a normal answer (tool calls when the request has ``tools``);
- ``error-429`` / ``error-500``: the provider's error body, with rate-limit headers on 429;
- ``slow``: waits `SLOW_SECONDS` before answering (timeouts);
- ``slow-stream``: sends one chunk, then a keep-alive comment every 50 ms for 10 s (disconnects);
- ``stall-stream``: sends one chunk, then nothing for `SLOW_SECONDS` (timeouts mid-stream);
- ``drop-stream``: sends one chunk, then drops the connection.

``GET /v1/broken-download`` starts a chunked binary body and drops the connection half-way.

A request with the header ``x-fake-gzip: 1`` gets a compressed answer when it accepts one. Usage
details on request: ``x-fake-cached: N`` and ``x-fake-reasoning: N`` add OpenAI's
``prompt_tokens_details.cached_tokens`` and ``completion_tokens_details.reasoning_tokens`` to a chat
completion's usage; ``x-fake-cache-write: N`` sets Anthropic's ``cache_creation_input_tokens``.

Every request is recorded (`Recorded`), and a stream the client abandoned is noted in `aborted`.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

SLOW_SECONDS = 5.0
CREATED = 1_700_000_000
OPENAI_RATE_HEADERS = {
    "x-ratelimit-limit-requests": "500",
    "x-ratelimit-remaining-requests": "0",
    "x-ratelimit-reset-requests": "120ms",
    "retry-after": "1",
}
ANTHROPIC_RATE_HEADERS = {
    "anthropic-ratelimit-requests-limit": "50",
    "anthropic-ratelimit-requests-remaining": "0",
    "retry-after": "2",
}
CHAT_WORDS = ["Hello", " there", "!", " How", " can", " I", " help", "?"]


@dataclass
class Recorded:
    method: str
    path: str
    raw_path: str  # as received, with the query string, before any decoding
    headers: Mapping[str, str]  # case-insensitive
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class FakeUpstream:
    url: str = ""
    requests: list[Recorded] = field(default_factory=list)
    # "<path> <slow model>" of each stream the reader abandoned. (A stalled stream of an earlier
    # test can be abandoned late, after `clear`: the model tells it apart.)
    aborted: list[str] = field(default_factory=list)

    def clear(self) -> None:
        self.requests.clear()
        self.aborted.clear()

    def last(self) -> Recorded:
        return self.requests[-1]


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def _sse(value: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + (value if isinstance(value, bytes) else _dumps(value)) + b"\n\n"


def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish}


def build_app(state: FakeUpstream) -> web.Application:
    async def record(request: web.Request) -> tuple[bytes, dict[str, Any]]:
        body = await request.read()
        state.requests.append(Recorded(request.method, request.path, request.raw_path, request.headers.copy(), body))
        try:
            data = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            data = {}
        return body, data if isinstance(data, dict) else {}

    def openai_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
        body = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
        return web.Response(status=status, body=_dumps(body), content_type="application/json", headers=headers)

    async def scenario_errors(model: str, anthropic: bool = False) -> web.Response | None:
        if model == "slow":
            await asyncio.sleep(SLOW_SECONDS)
        if model == "error-429":
            if anthropic:
                body = {
                    "type": "error",
                    "error": {"type": "rate_limit_error", "message": "Number of requests exceeded"},
                }
                return web.Response(
                    status=429, body=_dumps(body), content_type="application/json", headers=ANTHROPIC_RATE_HEADERS
                )
            return openai_error(429, "rate_limit_exceeded", "Rate limit reached for requests", OPENAI_RATE_HEADERS)
        if model == "error-500":
            if anthropic:
                body = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
                return web.Response(status=500, body=_dumps(body), content_type="application/json")
            return openai_error(500, "server_error", "The server had an error while processing your request.")
        return None

    async def stream(request: web.Request, chunks: list[bytes], slow: str = "") -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
        )
        response.headers["x-request-id"] = "req_fake_stream"
        await response.prepare(request)
        try:
            for i, chunk in enumerate(chunks):
                await response.write(chunk)
                if slow == "drop-stream" and i == 0:
                    request.transport.abort()
                    return response
                if slow == "stall-stream" and i == 0:
                    await asyncio.sleep(SLOW_SECONDS)
                elif slow and i == 0:
                    for _ in range(200):  # 10 s of keep-alive comments unless the reader goes away
                        await asyncio.sleep(0.05)
                        await response.write(b": keep-alive\n\n")
        except asyncio.CancelledError:
            state.aborted.append(f"{request.path} {slow}".rstrip())
            raise
        except ConnectionError:  # the reader went away (aiohttp's reset error is one too)
            state.aborted.append(f"{request.path} {slow}".rstrip())
            return response
        await response.write_eof()
        return response

    async def chat(request: web.Request) -> web.StreamResponse:
        _, data = await record(request)
        model = str(data.get("model", ""))
        error = await scenario_errors(model)
        if error is not None:
            return error
        if model in ("slow-stream", "stall-stream", "drop-stream"):
            first = {"id": "chatcmpl-slow", "object": "chat.completion.chunk", "created": CREATED, "model": model}
            chunk = {**first, "choices": [choice({"role": "assistant", "content": "Hel"})]}
            return await stream(request, [_sse(chunk), b"data: [DONE]\n\n"], slow=model)
        prompt_tokens = 9 + len(orjson.dumps(data.get("messages", []))) // 40
        if data.get("tools"):
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc123",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            }
            finish, completion_tokens = "tool_calls", 17
        else:
            message = {"role": "assistant", "content": "".join(CHAT_WORDS), "refusal": None}
            finish, completion_tokens = "stop", len(CHAT_WORDS)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if request.headers.get("x-fake-cached") or request.headers.get("x-fake-reasoning"):
            usage["prompt_tokens_details"] = {"cached_tokens": int(request.headers.get("x-fake-cached", 0))}
            usage["completion_tokens_details"] = {"reasoning_tokens": int(request.headers.get("x-fake-reasoning", 0))}
        base = {"id": "chatcmpl-fake123", "created": CREATED, "model": f"{model}-2024-07-18"}
        if not data.get("stream"):
            body = {
                **base,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
                "usage": usage,
                "system_fingerprint": "fp_fake",
            }
            response = web.Response(
                body=_dumps(body), content_type="application/json", headers={"x-request-id": "req_fake_json"}
            )
            if request.headers.get("x-fake-gzip"):
                response.enable_compression()
            return response
        include_usage = bool((data.get("stream_options") or {}).get("include_usage"))
        null_usage = {"usage": None} if include_usage else {}
        head = {**base, "object": "chat.completion.chunk", "system_fingerprint": "fp_fake"}
        chunks = [
            _sse(
                {
                    **head,
                    "choices": [choice({"role": "assistant", "content": ""})],
                    **null_usage,
                }
            )
        ]
        if data.get("tools"):
            call = message["tool_calls"][0]
            deltas = [
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ]
                },
                {"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]},
                {"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]},
            ]
        else:
            deltas = [{"content": word} for word in CHAT_WORDS]
        for delta in deltas:
            chunks.append(_sse({**head, "choices": [choice(delta)], **null_usage}))
        chunks.append(_sse({**head, "choices": [choice({}, finish)], **null_usage}))
        if include_usage:
            chunks.append(_sse({**head, "choices": [], "usage": usage}))
        chunks.append(b"data: [DONE]\n\n")
        return await stream(request, chunks)

    async def completions(request: web.Request) -> web.Response:
        _, data = await record(request)
        model = str(data.get("model", ""))
        error = await scenario_errors(model)
        if error is not None:
            return error
        body = {
            "id": "cmpl-fake",
            "object": "text_completion",
            "created": CREATED,
            "model": model,
            "choices": [{"text": " world", "index": 0, "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3},
        }
        return web.Response(body=_dumps(body), content_type="application/json")

    async def embeddings(request: web.Request) -> web.Response:
        _, data = await record(request)
        inputs = data.get("input")
        inputs = inputs if isinstance(inputs, list) else [inputs]
        body = {
            "id": "emb-fake",  # Mistral's SDK requires it; OpenAI's ignores it
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": [round(0.001 * (i + j), 6) for j in range(8)]}
                for i in range(len(inputs))
            ],
            "model": data.get("model"),
            "usage": {"prompt_tokens": 4 * len(inputs), "total_tokens": 4 * len(inputs)},
        }
        return web.Response(body=_dumps(body), content_type="application/json")

    async def responses(request: web.Request) -> web.StreamResponse:
        _, data = await record(request)
        model = str(data.get("model", ""))
        error = await scenario_errors(model)
        if error is not None:
            return error
        text = "Paris is the capital of France."
        output = [
            {
                "type": "message",
                "id": "msg_fake",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ]
        usage = {
            "input_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 19,
        }
        response = {
            "id": "resp_fake",
            "object": "response",
            "created_at": CREATED,
            "status": "completed",
            "model": model,
            "output": output,
            "usage": usage,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": {},
            "parallel_tool_calls": True,
            "temperature": 1.0,
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
        }
        if not data.get("stream"):
            return web.Response(body=_dumps(response), content_type="application/json")
        pending = {**response, "status": "in_progress", "output": [], "usage": None}
        events = [
            _sse({"type": "response.created", "sequence_number": 0, "response": pending}, "response.created"),
            _sse(
                {
                    "type": "response.output_text.delta",
                    "sequence_number": 1,
                    "item_id": "msg_fake",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": "Paris is",
                },
                "response.output_text.delta",
            ),
            _sse(
                {
                    "type": "response.output_text.delta",
                    "sequence_number": 2,
                    "item_id": "msg_fake",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": " the capital of France.",
                },
                "response.output_text.delta",
            ),
            _sse({"type": "response.completed", "sequence_number": 3, "response": response}, "response.completed"),
        ]
        return await stream(request, events)

    async def models(request: web.Request) -> web.Response:
        await record(request)
        body = {
            "id": "emb-fake",  # Mistral's SDK requires it; OpenAI's ignores it
            "object": "list",
            "data": [{"id": "gpt-4o-mini", "object": "model", "created": CREATED, "owned_by": "openai"}],
        }
        return web.Response(body=_dumps(body), content_type="application/json")

    async def messages(request: web.Request) -> web.StreamResponse:
        _, data = await record(request)
        model = str(data.get("model", ""))
        error = await scenario_errors(model, anthropic=True)
        if error is not None:
            return error
        text = "Bonjour! How can I help?"
        cache_write = int(request.headers.get("x-fake-cache-write", 0))
        usage = {"input_tokens": 21, "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": 4}
        usage["output_tokens"] = 9
        message = {
            "id": "msg_fake01",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if not data.get("stream"):
            return web.Response(body=_dumps(message), content_type="application/json", headers={"request-id": "req_a1"})
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        events = [
            _sse({"type": "message_start", "message": start}, "message_start"),
            _sse(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                "content_block_start",
            ),
            _sse({"type": "ping"}, "ping"),
            _sse(
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Bonjour!"}},
                "content_block_delta",
            ),
            _sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": " How can I help?"},
                },
                "content_block_delta",
            ),
            _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 9},
                },
                "message_delta",
            ),
            _sse({"type": "message_stop"}, "message_stop"),
        ]
        return await stream(request, events)

    async def echo(request: web.Request) -> web.Response:
        """Any other path: echo what arrived, so tests can see exactly what the proxy forwarded."""
        body, _ = await record(request)
        return web.Response(
            body=_dumps({"method": request.method, "path": request.path_qs, "bytes": len(body)}),
            content_type="application/json",
        )

    async def broken_download(request: web.Request) -> web.StreamResponse:
        await record(request)
        response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        await response.prepare(request)
        await response.write(b"\x00" * 4096)
        await asyncio.sleep(0.05)
        request.transport.abort()
        return response

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_get("/v1/broken-download", broken_download)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/embeddings", embeddings)
    app.router.add_post("/v1/responses", responses)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/anthropic/v1/messages", messages)
    app.router.add_route("*", "/{tail:.*}", echo)
    return app


class FakeUpstreamServer:
    """Runs the fake in a thread with its own event loop, on a free loopback port."""

    def __init__(self) -> None:
        self.state = FakeUpstream()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-upstream", daemon=True)
        self._runner: web.AppRunner | None = None

    def start(self) -> FakeUpstream:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        self._thread.start()

        async def serve() -> None:
            self._runner = web.AppRunner(build_app(self.state), access_log=None)
            await self._runner.setup()
            await web.SockSite(self._runner, sock).start()

        asyncio.run_coroutine_threadsafe(serve(), self._loop).result(10)
        self.state.url = f"http://127.0.0.1:{port}"
        return self.state

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
