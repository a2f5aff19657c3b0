"""One trace dict in, one priced `TraceRecord` out, or a `TraceValidationError` naming every bad field.

Hand-written rather than a DRF serializer: a batch of 1,000 traces goes through here on the ingest
hot path, and a serializer costs ~20x more per item. The rules (DESIGN.md, Trace; docs/runs.md):
`model` is required of the calls (`kind` `llm`, the default, and `embedding`), which alone are priced
and have missing usage estimated; the run's other spans carry what they are sent; tokens are
non-negative integers and `total_tokens`, when given with both parts, must be their sum; `status`
is success / error / rate_limited (default success, or error when an `error` object is present);
1 MiB per trace, 50 tags, 64 metadata keys. Unknown fields are ignored, as telemetry intakes do, so
a newer SDK never loses traces against an older server.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson
from django.conf import settings

from .ids import CLIENT_ID_RE, new_trace_id
from .kinds import CALL_KINDS, Kind
from .pricing import infer_provider, price
from .records import TraceRecord
from .usage import COMPLETION_DETAILS, DETAIL_FIELDS, PROMPT_DETAILS, TokenDetails, details_error

MAX_INT = 2_147_483_647  # Postgres integer: what the token and latency columns hold
# The timestamps every exporter can encode (docs/api.md, Limits): not before 2000 (no negative
# epochs, nothing a destination's retention has long dropped) and at most a day ahead (clock skew).
# With durations capped at MAX_INT ms (~24.8 days) the end time stays far inside int64
# nanoseconds (year 2262), protobuf fixed64 and Datadog's nanosecond fields.
EARLIEST_TIMESTAMP = datetime(2000, 1, 1, tzinfo=UTC)
MAX_FUTURE = timedelta(days=1)
MAX_COST = Decimal("99999999")  # Trace.cost / client_cost: 18 digits, 10 after the point
STATUSES = ("success", "error", "rate_limited")
TEXT_LIMITS = {"environment": 64, "service_name": 200, "session_id": 200, "user_id": 200}
MAX_TAG_LENGTH = 200
MAX_METADATA_KEY_LENGTH = 200
CHARS_PER_TOKEN = 4  # the usual rule of thumb when a client reports no usage
_FREE_FORM = ("input", "output", "metadata", "error")
_LEAP_SECOND = re.compile(r"(T\d{2}:\d{2}:)60")
KINDS = tuple(str(k) for k in Kind)
MAX_RUN_ID = 128
MAX_NAME = 200
# A run id goes in a URL path (GET /api/v1/runs/{run_id}): any text but control characters and "/".
_RUN_ID_BAD = re.compile(r"[\x00-\x1f\x7f/]")
# Before issue 22 the Python SDK sent a `tracerelay.trace()` block as a call of its own: provider
# "span", model "span:<name>". Such a record (no `kind`) is read as the structural span it is.
LEGACY_SPAN_PROVIDER = "span"
LEGACY_SPAN_PREFIX = "span:"


class TraceValidationError(Exception):
    """``errors`` maps a field (dotted path) to messages; ``status`` is 400, or 413 for size limits."""

    def __init__(self, errors: dict[str, list[str]], status: int = 400) -> None:
        self.errors = errors
        self.status = status
        first = next(iter(errors.items()), ("", ["invalid trace"]))
        super().__init__(f"{first[0]}: {first[1][0]}" if first[0] else first[1][0])


class _Errors:
    __slots__ = ("errors",)

    def __init__(self) -> None:
        self.errors: dict[str, list[str]] = {}

    def add(self, field: str, message: str) -> None:
        self.errors.setdefault(field, []).append(message)


def normalize_trace(
    data: Mapping[str, Any], *, team_id: int, environment: str = "", source: str = "api"
) -> TraceRecord:
    """Validate one trace, fill defaults (provider, timestamp, id, status) and price it.

    ``environment`` is the sending key's environment, used when the trace names none.
    """
    if not isinstance(data, Mapping):
        raise TraceValidationError({"": ["A trace must be a JSON object."]})
    try:
        blob = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS, default=str)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise TraceValidationError({"": [f"The trace is not valid JSON data: {exc}"]})
    limit = settings.TRACE_MAX_BYTES
    errors = _Errors()
    if b"\\u0000" in blob:
        # Postgres text and jsonb cannot hold NUL. One rule: a NUL anywhere in what a client sends is
        # a 400 naming the field (identifiers are checked where they are read, below; free-form
        # content here). The proxy alone records what it saw with U+FFFD in place of each NUL: the
        # call has happened and its trace must not be lost over the bodies' content.
        if source == "proxy":
            data = {**data, **{k: _without_nul(data[k]) for k in _FREE_FORM if k in data}}
        else:
            for path in _nul_paths({k: data[k] for k in _FREE_FORM if k in data}):
                errors.add(path, "Must not contain NUL characters.")
    if len(blob) > limit:
        if source != "proxy":
            raise TraceValidationError({"": [f"A trace may be at most {limit} bytes; this one is {len(blob)}."]}, 413)
        # The proxy never loses a call over its size: it keeps the metrics and drops the bodies.
        data = {**data, "input": {"truncated": True, "bytes": len(blob)}, "output": None}

    kind, name, legacy = _kind_and_name(data, errors)
    is_call = kind in CALL_KINDS
    model = _text(data, "model", errors, required=is_call, max_length=200)
    provider = _text(data, "provider", errors, max_length=64).lower()
    if legacy:
        model, provider = "", ""

    prompt = _count(data, "prompt_tokens", errors)
    completion = _count(data, "completion_tokens", errors)
    total = _count(data, "total_tokens", errors)
    detail_counts = {name: _count(data, name, errors) or 0 for name in DETAIL_FIELDS}
    latency = _duration(data, "latency_ms", errors)
    ttft = _duration(data, "time_to_first_token_ms", errors)
    timestamp = _timestamp(data.get("timestamp"), errors)

    error_type, error_message, has_error = _error(data.get("error"), errors)
    status = _status(data.get("status"), has_error, errors)

    tags = _tags(data.get("tags"), errors)
    metadata = _metadata(data.get("metadata"), errors)
    texts = {name: _text(data, name, errors, max_length=length) for name, length in TEXT_LIMITS.items()}
    client_cost = _cost(data.get("cost"), errors)

    raw_id = data.get("id")
    trace_id = ""
    if raw_id is not None:
        if not isinstance(raw_id, str) or not CLIENT_ID_RE.match(raw_id):
            errors.add("id", "Must be 1-128 characters of A-Z a-z 0-9 . _ : -")
        else:
            trace_id = raw_id
    run_id, parent_id = _run_fields(data, trace_id, errors)

    # Usage: what the client reported, completed where it is implied, estimated where it is missing.
    usage_estimated = False
    if not is_call:
        pass  # a structural span has no usage of its own to estimate (docs/runs.md)
    elif prompt is None and completion is None:
        if total is not None:
            prompt, completion, usage_estimated = total, 0, True
        else:
            prompt = _estimate_tokens(data.get("input"))
            completion = _estimate_tokens(data.get("output"))
            usage_estimated = True
    elif total is not None and (prompt is None or completion is None):
        known = prompt if prompt is not None else completion
        assert known is not None
        if known > total:
            errors.add("total_tokens", f"total_tokens ({total}) is less than the tokens reported ({known}).")
        elif prompt is None:
            prompt = total - known
        else:
            completion = total - known
    prompt = prompt or 0
    completion = completion or 0
    if total is not None and not errors.errors.get("total_tokens") and prompt + completion != total:
        errors.add(
            "total_tokens",
            f"total_tokens ({total}) must equal prompt_tokens + completion_tokens ({prompt + completion}).",
        )
    if prompt + completion > MAX_INT:
        errors.add("total_tokens", f"Must be at most {MAX_INT}.")
    details = _details(detail_counts, prompt, completion, source, errors)

    if errors.errors:
        raise TraceValidationError(errors.errors)

    if not provider and model:
        provider = infer_provider(model)
    cost, unpriced, price_source, version = None, False, "", ""
    if is_call:  # only calls are priced, or ever unpriced
        priced = price(
            model=model,
            provider=provider,
            prompt_tokens=prompt,
            completion_tokens=completion,
            timestamp=timestamp,
            details=details,
            team_id=team_id,
        )
        cost, unpriced, price_source, version = priced.cost, priced.unpriced, priced.source, priced.version
    trace_id = trace_id or new_trace_id()
    return TraceRecord(
        trace_id=trace_id,
        team_id=team_id,
        run_id=run_id or trace_id,
        parent_id=parent_id,
        kind=kind,
        name=name,
        model=model,
        provider=provider,
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        **details.as_dict(),
        latency_ms=latency,
        time_to_first_token_ms=ttft,
        timestamp=timestamp or datetime.now(tz=UTC),
        status=status,
        error_type=error_type,
        error_message=error_message,
        input=data.get("input"),
        output=data.get("output"),
        tags=tags,
        metadata=metadata,
        environment=texts["environment"] or environment,
        service_name=texts["service_name"],
        session_id=texts["session_id"],
        user_id=texts["user_id"],
        cost=cost,
        unpriced=unpriced,
        usage_estimated=usage_estimated,
        source=source,
        client_cost=client_cost,
        price_source=price_source,
        price_version=version,
    )


def _kind_and_name(data: Mapping[str, Any], errors: _Errors) -> tuple[str, str, bool]:
    """The span's kind (default `llm`), its name, and whether it is a pre-runs SDK block (see
    LEGACY_SPAN_PROVIDER), whose name is in its model."""
    raw = data.get("kind")
    name = _text(data, "name", errors, max_length=MAX_NAME)
    if raw is None:
        model = data.get("model")
        if data.get("provider") == LEGACY_SPAN_PROVIDER and isinstance(model, str):
            legacy_name = model.removeprefix(LEGACY_SPAN_PREFIX).strip()[:MAX_NAME]
            return Kind.OTHER, name or legacy_name, True
        return Kind.LLM, name, False
    if not isinstance(raw, str) or raw not in KINDS:
        shown = f" '{raw[:50]}'" if isinstance(raw, str) else ""
        errors.add("kind", f"Unknown kind{shown}: must be one of {', '.join(KINDS)}.")
        return Kind.LLM, name, False
    return raw, name, False


def _run_fields(data: Mapping[str, Any], trace_id: str, errors: _Errors) -> tuple[str, str]:
    """``run_id`` (absent or "": the record is a run of its own) and ``parent_id`` ("" for a root)."""
    run_id = data.get("run_id")
    if run_id is None or run_id == "":
        run_id = ""
    elif not isinstance(run_id, str):
        errors.add("run_id", "Must be a string.")
        run_id = ""
    elif len(run_id) > MAX_RUN_ID:
        errors.add("run_id", f"Must be at most {MAX_RUN_ID} characters; this one has {len(run_id)}.")
        run_id = ""
    elif _RUN_ID_BAD.search(run_id) or not run_id.strip():
        errors.add("run_id", 'Must be text without control characters or "/".')
        run_id = ""
    parent_id = data.get("parent_id")
    if parent_id is None or parent_id == "":
        return run_id, ""
    if not isinstance(parent_id, str) or not CLIENT_ID_RE.match(parent_id):
        errors.add("parent_id", "Must be the id of another span of the run: 1-128 characters of A-Z a-z 0-9 . _ : -")
        return run_id, ""
    if parent_id == trace_id:
        errors.add("parent_id", "A span cannot be its own parent: parent_id equals id.")
    elif not run_id and "run_id" not in errors.errors:
        errors.add("parent_id", "A span with a parent needs the run_id of its run (the parent's).")
    return run_id, parent_id


def _text(data: Mapping[str, Any], name: str, errors: _Errors, *, required: bool = False, max_length: int) -> str:
    value = data.get(name)
    if value is None:
        if required:
            errors.add(name, "This field is required.")
        return ""
    if not isinstance(value, str):
        errors.add(name, "Must be a string.")
        return ""
    value = value.strip()
    if required and not value:
        errors.add(name, "Must not be empty.")
    elif len(value) > max_length:
        errors.add(name, f"Must be at most {max_length} characters.")
    elif "\x00" in value:
        errors.add(name, "Must not contain NUL characters.")
    return value


def _details(counts: dict[str, int], prompt: int, completion: int, source: str, errors: _Errors) -> TokenDetails:
    """The parts of the prompt and completion (traces/usage.py), each within its whole: a 400 naming
    the field when not, except from the proxy and OTLP, which never lose a call over what an upstream or
    an instrumentation reported (they keep what fits)."""
    if source in ("proxy", "otlp"):
        for name in PROMPT_DETAILS:
            counts[name] = min(counts[name], prompt)
        counts["cache_write_tokens"] = min(counts["cache_write_tokens"], prompt - counts["cached_tokens"])
        for name in COMPLETION_DETAILS:
            counts[name] = min(counts[name], completion)
    else:
        problem = details_error(counts, prompt, completion)
        if problem is not None:
            errors.add(*problem)
    return TokenDetails(**counts)


def _count(data: Mapping[str, Any], name: str, errors: _Errors) -> int | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            errors.add(name, "Must be an integer.")
            return None
    return value if _within_bounds(value, name, errors) else None


def _duration(data: Mapping[str, Any], name: str, errors: _Errors) -> int | None:
    """Milliseconds: integers, or numbers with a fraction (many SDKs send floats), rounded."""
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        errors.add(name, "Must be a number of milliseconds.")
        return None
    return round(value) if _within_bounds(value, name, errors) else None


def _within_bounds(value: float, name: str, errors: _Errors) -> bool:
    """Counts and durations: 0 to MAX_INT, what the database's integer columns hold."""
    if value < 0:
        errors.add(name, "Must not be negative.")
        return False
    if value > MAX_INT:
        errors.add(name, f"Must be at most {MAX_INT}.")
        return False
    return True


def _timestamp(value: Any, errors: _Errors) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        errors.add("timestamp", "Must be an ISO 8601 date-time string.")
        return None
    parsed = parse_datetime(value) if len(value) <= 64 else None
    if parsed is None:
        errors.add("timestamp", "Must be an ISO 8601 date-time, e.g. 2025-01-31T12:00:00Z.")
        return None
    latest = datetime.now(tz=UTC) + MAX_FUTURE
    if not EARLIEST_TIMESTAMP <= parsed <= latest:
        errors.add("timestamp", f"Must be between {EARLIEST_TIMESTAMP:%Y-%m-%d} and one day from now (UTC).")
        return None
    return parsed


def _error(value: Any, errors: _Errors) -> tuple[str, str, bool]:
    if value is None:
        return "", "", False
    if isinstance(value, str):
        return "", value, True
    if not isinstance(value, Mapping):
        errors.add("error", "Must be an object {type, message} or a string.")
        return "", "", False
    kind = value.get("type")
    message = value.get("message")
    if kind is not None and not isinstance(kind, str):
        errors.add("error.type", "Must be a string.")
        kind = ""
    if message is not None and not isinstance(message, str):
        errors.add("error.message", "Must be a string.")
        message = ""
    kind = (kind or "").strip()
    if len(kind) > 200:
        errors.add("error.type", "Must be at most 200 characters.")
    if "\x00" in kind:
        errors.add("error.type", "Must not contain NUL characters.")
    return kind, message or "", True


def _status(value: Any, has_error: bool, errors: _Errors) -> str:
    if value is None:
        return "error" if has_error else "success"
    if not isinstance(value, str):
        errors.add("status", "Must be one of: success, error, rate_limited.")
        return "success"
    if value not in STATUSES:
        errors.add("status", f"Unknown status '{value[:50]}': must be one of success, error, rate_limited.")
        return "success"
    return value


def _tags(value: Any, errors: _Errors) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        errors.add("tags", "Must be a list of strings.")
        return ()
    limit = settings.TRACE_MAX_TAGS
    if len(value) > limit:
        errors.add("tags", f"At most {limit} tags; got {len(value)}.")
        return ()
    out: dict[str, None] = {}
    for i, tag in enumerate(value):
        if not isinstance(tag, str) or not tag.strip():
            errors.add(f"tags[{i}]", "Must be a non-empty string.")
        elif len(tag) > MAX_TAG_LENGTH:
            errors.add(f"tags[{i}]", f"Must be at most {MAX_TAG_LENGTH} characters.")
        elif "\x00" in tag:
            errors.add(f"tags[{i}]", "Must not contain NUL characters.")
        else:
            out[tag.strip()] = None
    return tuple(out)


def _metadata(value: Any, errors: _Errors) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        errors.add("metadata", "Must be an object of string keys to JSON values.")
        return {}
    limit = settings.TRACE_MAX_METADATA_KEYS
    if len(value) > limit:
        errors.add("metadata", f"At most {limit} keys; got {len(value)}.")
        return {}
    for key in value:
        if not isinstance(key, str) or not key:
            errors.add("metadata", "Keys must be non-empty strings.")
        elif len(key) > MAX_METADATA_KEY_LENGTH:
            errors.add(f"metadata.{key[:40]}…", f"Keys must be at most {MAX_METADATA_KEY_LENGTH} characters.")
    return dict(value)


def _cost(value: Any, errors: _Errors) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        errors.add("cost", "Must be a number (USD).")
        return None
    try:
        cost = Decimal(str(value))
    except InvalidOperation:  # pragma: no cover - str() of a number always parses
        errors.add("cost", "Must be a number (USD).")
        return None
    if not cost.is_finite() or cost < 0:
        errors.add("cost", "Must be a non-negative number (USD).")
        return None
    if cost > MAX_COST:
        errors.add("cost", f"Must be at most {MAX_COST}.")
        return None
    return cost.quantize(Decimal("0.0000000001"))


def _estimate_tokens(content: Any) -> int:
    if content is None:
        return 0
    text = content if isinstance(content, str) else orjson.dumps(content, default=str).decode()
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _nul_paths(value: Mapping[str, Any], limit: int = 5) -> list[str]:
    """Where NUL characters are, as field paths (``metadata.key``, ``input[2].content``), at most
    ``limit`` of them; a key holding one is named by its path too. Iterative: depth is no danger."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [(str(k), v) for k, v in reversed(list(value.items()))]
    while stack and len(found) < limit:
        path, item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                found.append(path)
        elif isinstance(item, Mapping):
            children = []
            for key, child in item.items():
                name = str(key)
                if "\x00" in name:
                    found.append(f"{path}.{name[:60]!r}")  # repr shows where the NUL is: '\x00'
                children.append((f"{path}.{name[:60]}", child))
            stack.extend(reversed(children))
        elif isinstance(item, list | tuple):
            stack.extend(reversed([(f"{path}[{i}]", child) for i, child in enumerate(item)]))
    return found[:limit]


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, Mapping):
        return {(_without_nul(k) if isinstance(k, str) else k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nul(v) for v in value]
    return value


def parse_datetime(value: str) -> datetime | None:
    """ISO 8601 / RFC 3339 → aware UTC datetime (no offset means UTC), or None.

    Lenient where clients differ: lowercase t/z, a leap second (:60, read as :59), and an
    unencoded "+02:00" in a query string, which arrives as " 02:00".
    """
    text = value.strip().upper()
    if "T" in text:
        date_part, _, time_part = text.partition("T")
        text = f"{date_part}T{time_part.replace(' ', '+')}"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        leap = _LEAP_SECOND.sub(r"\g<1>59", text)
        if leap == text:
            return None
        try:
            parsed = datetime.fromisoformat(leap)
        except ValueError:
            return None
    try:
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
