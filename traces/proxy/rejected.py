"""Proxy traces the store refused, set aside by the writer in ``<spool dir>/rejected/*.jsonl``:
listed and replayed by ``manage.py proxy_spool``.

A trace lands there when ingest refuses it (a validation error) or the database does (its team was
deleted meanwhile, a value out of a column's range). Once the cause is fixed, replaying stores it
through the normal path (`traces_ingest`, as the writer does), so it is priced, redacted, routed
and delivered like any other. Replaying is idempotent: the trace keeps its id, and ingest returns an
already stored id instead of storing it again. A replayed trace leaves the file; one refused again
stays, with the new reason.

Files are rewritten under the same `flock` the writer appends under (`writer.append_locked`), and
replaced rather than truncated, so a crash mid-way never loses a line and a writer that waited
for the lock appends to the new file.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from django.db import DataError, IntegrityError

from accounts.principals import KeyPrincipal
from pipeline.services import traces_ingest

Ingest = Callable[..., Sequence[Any]]


@dataclass(frozen=True)
class RejectedTrace:
    trace_id: str
    rejected_at: datetime | None
    team_id: int
    model: str
    reason: str
    file: Path


@dataclass
class ReplayReport:
    stored: list[str] = field(default_factory=list)
    already_stored: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # trace id → why, again


def rejected_dir(spool_dir: Path) -> Path:
    return spool_dir / "rejected"


def reason_text(reason: Any) -> str:
    """One line: ``field: message; …`` for ingest's errors, the exception for the database's."""
    if isinstance(reason, dict):
        if set(reason) == {"exception"}:
            return str(reason["exception"])
        parts = []
        for name, messages in reason.items():
            text = "; ".join(str(m) for m in messages) if isinstance(messages, list) else str(messages)
            parts.append(f"{name}: {text}")
        return "; ".join(parts)
    return str(reason)


def _files(spool_dir: Path) -> list[Path]:
    try:
        return sorted(p for p in rejected_dir(spool_dir).iterdir() if p.suffix == ".jsonl")
    except FileNotFoundError:
        return []


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None  # a torn last line (a crash mid-append): kept as is, never replayed
    if not isinstance(record, dict) or not isinstance(record.get("trace"), dict):
        return None
    return record


def _entry(record: dict[str, Any], file: Path) -> RejectedTrace:
    trace = record["trace"]
    when = record.get("rejected_at")
    try:
        rejected_at = datetime.fromisoformat(when) if isinstance(when, str) else None
    except ValueError:
        rejected_at = None
    if rejected_at is None:  # set aside before the writer stamped the time: the file's is close
        rejected_at = datetime.fromtimestamp(file.stat().st_mtime, tz=UTC)
    return RejectedTrace(
        trace_id=str(trace.get("id") or ""),
        rejected_at=rejected_at,
        team_id=int(record.get("principal", {}).get("team_id") or 0),
        model=str(trace.get("model") or ""),
        reason=reason_text(record.get("reason")),
        file=file,
    )


def rejected_traces(spool_dir: Path) -> list[RejectedTrace]:
    """Every trace set aside under ``spool_dir``, oldest first."""
    out = []
    for file in _files(spool_dir):
        for line in file.read_bytes().splitlines():
            record = _parse(line)
            if record is not None:
                out.append(_entry(record, file))
    return sorted(out, key=lambda r: (r.rejected_at or datetime.min.replace(tzinfo=UTC), r.trace_id))


def _principal(record: dict[str, Any]) -> KeyPrincipal:
    p = record["principal"]
    return KeyPrincipal(p["key_id"], p["team_id"], p["environment"], p["prefix"], frozenset(p["scopes"]))


def _replay_one(record: dict[str, Any], ingest: Ingest, report: ReplayReport) -> bool:
    """Store one trace; True when it is stored (now or before), so its line can go."""
    trace_id = str(record["trace"].get("id") or "")
    try:
        results = ingest(principal=_principal(record), items=[record["trace"]], source="proxy")
    except (IntegrityError, DataError) as exc:
        record["reason"] = {"exception": repr(exc)[:1000]}
    else:
        result = results[0]
        if not result.errors:
            (report.stored if result.created else report.already_stored).append(trace_id)
            return True
        record["reason"] = result.errors
    record["rejected_at"] = datetime.now(UTC).isoformat()
    report.refused[trace_id] = reason_text(record["reason"])
    return False


def replay_rejected(
    spool_dir: Path, trace_ids: Collection[str] | None = None, *, ingest: Ingest = traces_ingest
) -> ReplayReport:
    """Store the set-aside traces (those of ``trace_ids``, or all of them) through ingest.

    An error that is not the trace's own (the database out) stops the replay: what was replayed
    so far has left its file, the rest stays, and the error is raised.
    """
    report = ReplayReport()
    for file in _files(spool_dir):
        try:
            handle = open(file, "rb")
        except FileNotFoundError:
            continue
        with handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # the writer appends under the same lock
            if os.fstat(handle.fileno()).st_nlink == 0:  # replaced by another replay meanwhile
                continue
            kept: list[bytes] = []
            changed = False
            failure: BaseException | None = None
            for line in handle.read().splitlines():
                record = _parse(line)
                wanted = record is not None and (trace_ids is None or record["trace"].get("id") in trace_ids)
                if failure is not None or record is None or not wanted:
                    kept.append(line)
                    continue
                try:
                    done = _replay_one(record, ingest, report)
                except Exception as exc:
                    failure = exc
                    kept.append(line)
                    continue
                changed = True
                if not done:
                    kept.append(orjson.dumps(record, default=str))
            if changed:
                _rewrite(file, kept)
            if failure is not None:
                raise failure
    return report


def _rewrite(file: Path, lines: list[bytes]) -> None:
    """Replace ``file`` with ``lines`` (or remove it when none are left); the caller holds its lock."""
    if not lines:
        file.unlink()
        return
    temporary = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    with open(temporary, "wb") as out:
        out.write(b"".join(line + b"\n" for line in lines))
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, file)
