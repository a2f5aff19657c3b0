"""A webhook receiver on loopback that checks every request against our webhook format
(docs/destinations/webhook.md), answers as a test scripts it (errors, Retry-After, latency, a held
request) and stores traces the way a careful receiver does: by trace id, so a re-send is counted
but never stored twice.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from integrations.exporters.webhook import SIGNATURE_HEADER, verify_signature

TRACE_STATUSES = {"success", "error", "rate_limited"}
SPAN_KINDS = {"llm", "embedding", "agent", "tool", "retrieval", "chain", "workflow", "guardrail", "event", "other"}


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] | None = None
    body: bytes = b'{"ok":true}'


class WebhookSink:
    def __init__(self, *, secret: str | None = None, latency_s: float = 0.0) -> None:
        self.secret = secret
        self.latency_s = latency_s
        self.plan: deque[Answer] = deque()
        self.default = Answer()
        self.requests: list[dict[str, Any]] = []  # every request: trace ids, the answer given, its delivery id
        self.errors: list[str] = []  # format violations (the request got a 400)
        self.sends: Counter[str] = Counter()  # trace id → times it arrived in an accepted request
        self.stored: dict[str, dict[str, Any]] = {}  # trace id → payload (deduplicated)
        self.scores: dict[str, dict[str, Any]] = {}  # score id → payload, from `score` events (deduplicated)
        self.score_sends: Counter[str] = Counter()
        self._held = threading.Event()
        self._hold_next = False
        self.holding = threading.Event()  # set while a request is being held
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # --- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> WebhookSink:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/hook"

    # --- scripting -------------------------------------------------------------------------
    def answer(self, *statuses: int, retry_after: float | None = None) -> None:
        """Answer the next requests with these statuses (then the default)."""
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
        self.plan.extend(Answer(s, headers, b'{"error":"scripted"}') for s in statuses)

    def always(self, status: int) -> None:
        self.default = Answer(status, None, b'{"error":"scripted"}' if status >= 300 else b'{"ok":true}')

    def hold_next(self) -> None:
        """Keep the next request waiting (not answered, not stored) until `release`."""
        self._held.clear()
        self._hold_next = True

    def release(self) -> None:
        self._held.set()

    # --- reading ---------------------------------------------------------------------------
    def wait_until(self, predicate: Callable[[WebhookSink], bool], timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.2))
        return True

    @property
    def duplicates(self) -> dict[str, int]:
        return {k: n for k, n in self.sends.items() if n > 1}

    def kept_by_delivery_id(self) -> int:
        """How many traces a receiver that deduplicates on ``X-Tracerelay-Delivery`` alone (not on
        each trace's id) would have stored: every accepted request whose delivery id is new."""
        seen: set[str] = set()
        kept = 0
        with self._changed:
            for request in self.requests:
                if 200 <= request["status"] < 300 and request["delivery"] not in seen:
                    seen.add(request["delivery"])
                    kept += len(request["ids"])
        return kept

    # --- the server ------------------------------------------------------------------------
    def _check(self, headers: Any, raw: bytes) -> tuple[list[str], list[dict[str, Any]]]:
        problems: list[str] = []
        if not (headers.get("Content-Type") or "").startswith("application/json"):
            problems.append(f"content type {headers.get('Content-Type')!r}")
        event = headers.get("X-Tracerelay-Event")
        if event not in ("traces", "score"):
            problems.append(f"event header {event!r}")
        try:
            body = json.loads(raw)
        except ValueError:
            return [*problems, "body is not JSON"], []
        if event == "score":
            return self._check_scores(problems, headers, raw, body)
        delivery = headers.get("X-Tracerelay-Delivery")
        if not delivery or delivery != headers.get("Idempotency-Key") or delivery != body.get("id"):
            problems.append("delivery id headers and body id disagree")
        if self.secret is not None and not verify_signature(self.secret, headers.get(SIGNATURE_HEADER) or "", raw):
            problems.append("bad or missing signature")
        if body.get("type") != "traces" or body.get("version") != 1:
            problems.append(f"type/version {body.get('type')!r}/{body.get('version')!r}")
        traces = body.get("traces")
        if not isinstance(traces, list) or not traces:
            return [*problems, "no traces"], []
        for t in traces:
            if not isinstance(t.get("id"), str) or not t["id"]:
                problems.append("a trace without an id")
            if not isinstance(t.get("model"), str) or (t.get("kind") in ("llm", "embedding") and not t["model"]):
                problems.append(f"trace {t.get('id')}: no model")
            if not isinstance(t.get("run_id"), str) or not t["run_id"] or t.get("kind") not in SPAN_KINDS:
                problems.append(f"trace {t.get('id')}: run_id {t.get('run_id')!r}, kind {t.get('kind')!r}")
            if t.get("parent_id") is not None and not isinstance(t["parent_id"], str):
                problems.append(f"trace {t.get('id')}: parent_id {t.get('parent_id')!r}")
            if t.get("status") not in TRACE_STATUSES:
                problems.append(f"trace {t.get('id')}: status {t.get('status')!r}")
            for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
                if not isinstance(t.get(key), int) or t[key] < 0:
                    problems.append(f"trace {t.get('id')}: {key} {t.get(key)!r}")
            if not isinstance(t.get("timestamp"), str):
                problems.append(f"trace {t.get('id')}: timestamp {t.get('timestamp')!r}")
        return problems, traces

    def _check_scores(
        self, problems: list[str], headers: Any, raw: bytes, body: dict[str, Any]
    ) -> tuple[list[str], list[dict[str, Any]]]:
        """A ``score`` event: ``{"type": "score", "version": 1, "id", "destination", "scores": [...]}``."""
        delivery = headers.get("X-Tracerelay-Delivery")
        if not delivery or delivery != headers.get("Idempotency-Key") or delivery != body.get("id"):
            problems.append("delivery id headers and body id disagree")
        if self.secret is not None and not verify_signature(self.secret, headers.get(SIGNATURE_HEADER) or "", raw):
            problems.append("bad or missing signature")
        if body.get("type") != "score" or body.get("version") != 1:
            problems.append(f"type/version {body.get('type')!r}/{body.get('version')!r}")
        scores = body.get("scores")
        if not isinstance(scores, list) or not scores:
            return [*problems, "no scores"], []
        expected_type = {bool: "boolean", int: "numeric", float: "numeric", str: "categorical"}
        for score in scores:
            if set(score) != {
                "id",
                "trace_id",
                "run_id",
                "name",
                "value",
                "data_type",
                "comment",
                "source",
                "created_at",
            }:
                problems.append(f"score fields {sorted(score)}")
            elif expected_type.get(type(score["value"])) != score["data_type"]:
                problems.append(f"score {score['id']}: data_type {score['data_type']!r} for {score['value']!r}")
        return problems, [{**s, "_score": True} for s in scores]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in two writes

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if sink._hold_next:
                    sink._hold_next = False
                    sink.holding.set()
                    sink._held.wait(120)
                    sink.holding.clear()
                if sink.latency_s:
                    time.sleep(sink.latency_s)
                problems, traces = sink._check(self.headers, raw)
                answer = Answer(400, None, json.dumps({"errors": problems}).encode()) if problems else None
                with sink._changed:
                    if answer is None:
                        answer = sink.plan.popleft() if sink.plan else sink.default
                    ids = [t.get("id") for t in traces]
                    delivery = self.headers.get("X-Tracerelay-Delivery")
                    sink.requests.append({"ids": ids, "status": answer.status, "delivery": delivery})
                    sink.errors.extend(problems)
                    if 200 <= answer.status < 300:
                        for t in traces:
                            if t.pop("_score", False):
                                sink.score_sends[t["id"]] += 1
                                sink.scores.setdefault(t["id"], t)
                                continue
                            sink.sends[t["id"]] += 1
                            sink.stored.setdefault(t["id"], t)
                    sink._changed.notify_all()
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer.body)))
                    for name, value in (answer.headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(answer.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the sender died while we held its request

            def do_GET(self) -> None:
                self.send_response(405)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler
