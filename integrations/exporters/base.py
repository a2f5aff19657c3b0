"""The exporter interface (modelled on healthchecks' Transport): one class per platform.

An exporter turns `TraceRecord`s into the destination's wire format and sends them. It raises
`ExportError`; ``permanent=True`` means retrying cannot help (bad credentials, a 4xx other than
408/429), so delivery skips straight to fallbacks. Exporters are synchronous: Celery workers
call them with a shared `httpx.Client`, a batch at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx

from config.problems import InvalidInput
from traces.records import TraceRecord


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
    max_batch: ClassVar[int] = 100
    secret_fields: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, target: Target, client: httpx.Client) -> None:
        self.target = target
        self.client = client

    @classmethod
    def validate_config(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """The cleaned config, or `ConfigError`. Secrets are included; the caller stores them apart."""
        raise NotImplementedError

    def export(self, traces: Sequence[TraceRecord]) -> None:
        """Send a batch (≤ ``max_batch``) with stable ids, so a re-send never duplicates."""
        raise NotImplementedError

    def check(self) -> CheckResult:
        """A real connection check: reachability and authentication, without creating data where possible."""
        raise NotImplementedError
