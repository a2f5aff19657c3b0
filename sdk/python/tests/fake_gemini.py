"""A fake Gemini API on loopback, in its real REST format (camelCase JSON; SSE for streams).

`POST /v1/models/<model>:generateContent` (or /v1beta/), `:streamGenerateContent?alt=sse` and
`:batchEmbedContents`; a model named ``error-429`` answers 429 RESOURCE_EXHAUSTED.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORDS = ["Hello", " from", " Gemini", "."]
PROMPT_TOKENS = 6
MODEL_VERSION = "gemini-2.0-flash-001"


def _usage(words: int) -> dict[str, Any]:
    return {
        "promptTokenCount": PROMPT_TOKENS,
        "candidatesTokenCount": words,
        "thoughtsTokenCount": 2,
        "totalTokenCount": PROMPT_TOKENS + words + 2,
    }


def _response(text: str, words: int, finish: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate], "usageMetadata": _usage(words), "modelVersion": MODEL_VERSION}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.server.requests.append((self.path, body))  # type: ignore[attr-defined]
        match = re.match(r"^/v1\w*/models/([^:]+):(\w+)", self.path)
        if match is None:
            return self._json(404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})
        model, method = match.groups()
        if model == "error-429":
            error = {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}
            return self._json(429, {"error": error})
        if method == "generateContent":
            return self._json(200, _response("".join(WORDS), len(WORDS), True))
        if method == "streamGenerateContent":
            chunks = [_response(word, i + 1, i == len(WORDS) - 1) for i, word in enumerate(WORDS)]
            payload = b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return None
        if method == "batchEmbedContents":
            count = len(body.get("requests", []))
            return self._json(200, {"embeddings": [{"values": [0.1, 0.2, 0.3]} for _ in range(count)]})
        return self._json(404, {"error": {"code": 404, "message": "no such method", "status": "NOT_FOUND"}})

    def _json(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class FakeGemini:
    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.requests = []  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def requests(self) -> list[tuple[str, Any]]:
        return self.server.requests  # type: ignore[attr-defined,no-any-return]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
