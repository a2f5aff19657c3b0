"""The exporter interface (modelled on healthchecks' Transport): one class per platform.

An exporter works in two steps, so that one bad trace never takes a batch down:

* `Exporter.encode` turns ONE `TraceRecord` into the destination's wire item (a span, a run, a
  log, JSON bytes). When a trace cannot be represented there (a time before 1970 in OTLP's
  unsigned nanoseconds, an end past year 9999, a span older than Datadog accepts) it raises
  `Unencodable`; any other exception is a failure of that trace alone too. `encode_batch` runs it
  per trace and returns the refusals beside the encoded items; delivery gives those traces up
  (fallback, else dead letter) with the reason and sends the rest.
* `Exporter.export_encoded` sends a batch of encoded items. It raises `ExportError` when the
  whole batch failed; ``permanent=True`` means retrying cannot help (bad credentials, a 4xx other
  than 408/429), so delivery skips straight to fallbacks. When the destination's answer refuses
  some items and accepts the others (a body naming per-item errors, an OTLP partial success, a
  batch conflict resolved item by item), it returns those items as `Refused` (batch index → the
  `ExportError` of that item, with the destination's reason): delivery retries or dead-letters
  them and counts the rest as delivered. When it refused some items without saying which and
  cannot be asked again (an OTLP partial success at a collector that may keep a span twice), the
  exporter sets ``warning`` instead: delivery counts the batch delivered and records the warning
  on each of its rows.

Exporters are synchronous: Celery workers call them with a shared `httpx.Client`, a batch at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx

from config.problems import InvalidInput
from traces.records import ScoreRecord, TraceRecord

log = logging.getLogger(__name__)
REASON_MAX = 1000


class ExportError(Exception):
    def __init__(
        self,
        message: str,
        *,
        permanent: bool = False,
        retry_after: float | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.retry_after = retry_after
        self.status_code = status_code


class Unencodable(Exception):
    """This one trace cannot be represented in the destination's format; the message says why."""


class NotYet(Exception):
    """This one trace cannot be sent yet (its parent span has not arrived, and the destination needs
    it first); delivery sends it later without spending an attempt. The message says why."""


@dataclass(frozen=True, slots=True)
class Encoded:
    """One trace in a destination's wire format, beside the record it came from."""

    record: TraceRecord
    item: Any


# What `Exporter.export_encoded` returns: the items the destination refused (index in the batch →
# why, as an `ExportError`), None or empty when it took them all.
Refused = dict[int, ExportError]


class ConfigError(InvalidInput):
    """Invalid integration config: ``errors`` maps field name → messages."""


@dataclass(frozen=True)
class Target:
    """A destination resolved for sending: the integration's settings with secrets decrypted,
    merged with the routed destination's own options (tags, webhook url)."""

    platform: str
    name: str
    config: Mapping[str, Any]  # platform fields, secrets included (decrypted)
    tags: tuple[str, ...] = ()
    metadata_mapping: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 10.0


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    message: str
    status_code: int | None = None
    latency_ms: int | None = None


class Exporter:
    platform: ClassVar[str]
    label: ClassVar[str] = ""
    max_batch: ClassVar[int] = 100
    secret_fields: ClassVar[frozenset[str]] = frozenset()

    # How long a trace that is `NotYet` waits before delivery tries it again.
    wait_seconds: ClassVar[float] = 15.0

    def __init__(self, target: Target, client: httpx.Client) -> None:
        self.target = target
        self.client = client
        # After `encode_batch`: index → reason for the traces that cannot be sent yet (`NotYet`).
        self.waiting: dict[int, str] = {}
        # After `export_encoded`: the destination took the batch but refused an unknown part of it.
        self.warning: str | None = None

    def prepare(self, traces: Sequence[TraceRecord]) -> None:
        """Read what encoding these traces needs besides themselves (a span's ancestors), once per
        batch, before `encode`. Nothing by default."""

    @classmethod
    def validate_config(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """The cleaned config, or `ConfigError`. Secrets are included; the caller stores them apart."""
        raise NotImplementedError

    def encode(self, record: TraceRecord) -> Any:
        """One trace in this destination's wire format; `Unencodable` when it cannot be. The record
        itself by default (an exporter whose `export_encoded` reads records)."""
        return record

    def export_encoded(self, batch: Sequence[Encoded]) -> Refused | None:
        """Send encoded traces (≤ ``max_batch``) with stable ids, so a re-send never duplicates;
        the items the destination refused, if it said which."""
        raise NotImplementedError

    # Whether `export_scores` sends scores to this platform (docs/scores.md): a destination without
    # it has its scores recorded as dead with the reason, never silently dropped.
    supports_scores: ClassVar[bool] = False

    @classmethod
    def trace_url(cls, config: Mapping[str, Any], *, team_id: int, trace_id: str, run_id: str) -> str | None:
        """Where the trace can be opened in this tool ("Open in <tool>" on the trace page), built from
        the integration's stored (non-secret) config and the ids this exporter sent it under
        (`ids`); None when the tool has no such page or the config lacks what the URL needs."""
        return None

    def export_scores(self, scores: Sequence[ScoreRecord]) -> None:
        """Send scores (≤ ``max_batch``) on traces this destination received, in its own terms, with
        stable ids (a re-send never duplicates); `ExportError` as for traces."""
        raise NotImplementedError

    def export(self, traces: Sequence[TraceRecord]) -> Refused | None:
        """Encode and send; here a trace that cannot be encoded fails the whole call (delivery uses
        `encode_batch` to set such traces aside instead)."""
        self.prepare(traces)
        return self.export_encoded([Encoded(record, self.encode(record)) for record in traces])

    def encode_batch(self, traces: Sequence[TraceRecord]) -> tuple[list[Encoded], dict[int, str]]:
        """Encode each trace on its own: the encoded ones, and index → reason for those refused
        (those that cannot be sent yet are in ``self.waiting``, neither encoded nor refused)."""
        encoded: list[Encoded] = []
        refused: dict[int, str] = {}
        self.waiting = {}
        self.prepare(traces)
        for index, record in enumerate(traces):
            try:
                encoded.append(Encoded(record, self.encode(record)))
            except NotYet as exc:
                self.waiting[index] = f"{self.destination} waits: {exc}"[:REASON_MAX]
            except Unencodable as exc:
                refused[index] = f"{self.destination} cannot take this trace: {exc}"[:REASON_MAX]
            except Exception as exc:  # out-of-range values (OverflowError, ValueError) or an encoding bug
                expected = isinstance(exc, (OverflowError, ValueError))
                log.log(
                    logging.INFO if expected else logging.ERROR,
                    "%s cannot encode trace %s",
                    self.target.platform,
                    record.trace_id,
                    exc_info=not expected,
                )
                reason = f"{self.destination} cannot encode this trace: {type(exc).__name__}: {exc}"
                refused[index] = reason[:REASON_MAX]
        return encoded, refused

    @property
    def destination(self) -> str:
        return f"{self.label or self.platform} ({self.target.name})"

    def check(self) -> CheckResult:
        """A real connection check: reachability and authentication, without creating data where possible."""
        raise NotImplementedError
