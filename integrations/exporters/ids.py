"""Stable ids at the destination: derived from (team, trace id) only, so a retry or a replay of the
same trace lands on the same OTel trace/span id or LangSmith run id and is never a second copy."""

from __future__ import annotations

import hashlib
import uuid

# Fixed forever: changing it would make every replay a duplicate.
RUN_NAMESPACE = uuid.UUID("6f3f1d6e-3c1b-5f0a-9a59-7d1c2b0e4a11")


def _digest(purpose: str, team_id: int, trace_id: str) -> bytes:
    return hashlib.sha256(f"tracerelay/{purpose}/{team_id}/{trace_id}".encode()).digest()


def otel_trace_id(team_id: int, trace_id: str) -> bytes:
    """16 bytes; never all zero (an invalid OTel id), which a hash makes practically certain anyway."""
    raw = _digest("trace", team_id, trace_id)[:16]
    return raw if any(raw) else b"\x00" * 15 + b"\x01"


def otel_span_id(team_id: int, trace_id: str) -> bytes:
    """8 bytes, never all zero."""
    raw = _digest("span", team_id, trace_id)[:8]
    return raw if any(raw) else b"\x00" * 7 + b"\x01"


def run_uuid(team_id: int, trace_id: str) -> uuid.UUID:
    """A UUIDv5 for destinations keyed by UUID (LangSmith runs, Helicone request ids)."""
    return uuid.uuid5(RUN_NAMESPACE, f"{team_id}/{trace_id}")


def batch_key(team_id: int, trace_ids: list[str]) -> str:
    """One id for a batch of traces (webhook delivery id): the same set gives the same id."""
    joined = "\n".join(sorted(trace_ids))
    return hashlib.sha256(f"tracerelay/batch/{team_id}/{joined}".encode()).hexdigest()[:32]


def score_uuid(team_id: int, score_id: str, destination: str) -> uuid.UUID:
    """A score's id at a destination keyed by UUID (LangSmith feedback, Langfuse scores): the same
    score re-sent to the same destination is the same record there, never a second one."""
    return uuid.uuid5(RUN_NAMESPACE, f"score/{team_id}/{destination}/{score_id}")
