"""What the server's answers mean to the worker: a batch's counters, the routing rules' status, the words
for a failure. Pure functions of an `Answer`, so the worker keeps only the sending and the waiting."""

from __future__ import annotations

import logging

from ._transport import Answer


def retryable(answer: Answer) -> bool:
    """No answer (refused, timeout, reset), 408, 429 or 5xx: worth another attempt."""
    return answer.status == 0 or answer.status in (408, 429) or answer.status >= 500


def batch_outcome(answer: Answer, count: int) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """The counters for `count` traces the server answered (stored, or refused: not retried), and the
    warnings to give as (kind, message)."""
    if answer.status in (200, 201):
        return {"sent": count}, []
    if answer.status == 207 and isinstance(answer.body, dict):
        refused = int(answer.body.get("failed") or 0)
        warnings = [
            ("item", f"tracerelay: the server refused a trace: {result.get('errors')}")
            for result in answer.body.get("results") or ()
            if isinstance(result, dict) and result.get("status", 0) >= 400
        ]
        return {"sent": count - refused, "rejected": refused}, warnings
    message = f"tracerelay: the server refused {count} trace(s) with {answer.status}: {detail(answer)}"
    return {"rejected": count}, [(f"status-{answer.status}", message)]


def rules_outcome(answer: Answer | None, service: str, count: int) -> tuple[str, int, str]:
    """`stats()["routing_rules"]` after registering a service's rules, and the log line (level, message)."""
    if answer is None:
        return "failed: server unreachable", logging.DEBUG, ""
    if 200 <= answer.status < 300:
        return "registered", logging.DEBUG, f"tracerelay: {count} routing rule(s) registered for {service}"
    if answer.status == 403:
        message = (
            "tracerelay: this API key may not change routing rules (a production key can); "
            f"routing_rules were not registered for {service}"
        )
        return "refused: 403", logging.WARNING, message
    if answer.status == 404:
        message = "tracerelay: the server does not accept per-service routing rules (too old?); ignored"
        return "unsupported: 404", logging.WARNING, message
    message = f"tracerelay: routing_rules were refused ({answer.status}): {detail(answer)}"
    return f"refused: {answer.status}", logging.WARNING, message


def failure(base_url: str, answer: Answer) -> str:
    """A failed attempt in words, for the log line at exit."""
    if answer.status:
        return f"{base_url} answered {answer.status}"
    if answer.unreachable:
        return f"{base_url} is unreachable ({answer.error})"
    return f"{base_url}: {answer.error}"


def detail(answer: Answer) -> str:
    body = answer.body
    if isinstance(body, dict):
        return str(body.get("detail") or body.get("title") or body)[:500]
    return answer.error or "no detail"
