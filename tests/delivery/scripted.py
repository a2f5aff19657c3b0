"""A scripted destination for the engine's own logic, and helpers to make outbox rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from delivery.models import Delivery
from integrations.exporters.base import Encoded, Exporter, ExportError, Unencodable
from routing.router import DestinationSpec
from tests.factories import IntegrationFactory, TraceFactory
from traces.records import TraceRecord


@dataclass
class Script:
    """What the scripted destination does: one outcome per export call (then ``default``)."""

    outcomes: list[Any] = field(default_factory=list)
    default: Any = None  # None = accept; an ExportError = raise it
    calls: list[list[str]] = field(default_factory=list)
    unencodable: dict[str, str] = field(default_factory=dict)  # trace id → why encode refuses it
    targets: list[Any] = field(default_factory=list)

    def next(self) -> Any:
        return self.outcomes.pop(0) if self.outcomes else self.default

    @property
    def sent_ids(self) -> list[str]:
        return [trace_id for call in self.calls for trace_id in call]


class ScriptedExporter(Exporter):
    platform = "webhook"
    max_batch: ClassVar[int] = 3
    scripts: ClassVar[dict[str, Script]] = {}

    def encode(self, record: TraceRecord) -> TraceRecord:
        script = self.scripts.setdefault(self.target.name, Script())
        if record.trace_id in script.unencodable:
            raise Unencodable(script.unencodable[record.trace_id])
        return record

    def export_encoded(self, batch: Sequence[Encoded]) -> None:
        script = self.scripts.setdefault(self.target.name, Script())
        script.calls.append([e.record.trace_id for e in batch])
        script.targets.append(self.target)
        outcome = script.next()
        if isinstance(outcome, BaseException):
            raise outcome


def make_integration(team, name: str, **kwargs: Any):
    kwargs.setdefault("platform", "webhook")
    kwargs.setdefault("config", {"url": f"http://127.0.0.1:9/{name}", "headers": {}})
    return IntegrationFactory(team=team, name=name, **kwargs)


def make_delivery(team, destination: str = "primary", *, trace=None, fallback: Sequence[str] = (), **kwargs: Any):
    trace = trace or TraceFactory(team=team)
    spec = DestinationSpec(destination, fallback=tuple(DestinationSpec(f) for f in fallback)).as_dict()
    return Delivery.objects.create(team=team, trace=trace, destination=destination, spec=spec, **kwargs)


def statuses(*rows: Delivery) -> list[str]:
    return [Delivery.objects.get(pk=r.pk).status for r in rows]


def transient(message: str = "503 Service Unavailable", retry_after: float | None = None) -> ExportError:
    return ExportError(message, retry_after=retry_after, status_code=503)


def permanent(message: str = "400 Bad Request", status: int = 400) -> ExportError:
    return ExportError(message, permanent=True, status_code=status)
