"""The router: a pure function of (trace, compiled rules, sampling policy) → decisions with reasons.

No ORM and no I/O here, so the ingest path, the dry-run endpoint and the tests all run the
same code. Conditions arrive already compiled to predicates (see `routing.conditions`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Predicate = Callable[[Mapping[str, Any]], bool]


def always(_: Mapping[str, Any]) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class DestinationSpec:
    """Where a rule sends traces: an integration named by name or platform, with its own options."""

    name: str
    sample_rate: float = 1.0
    tags: tuple[str, ...] = ()
    url: str | None = None
    fallback: tuple[DestinationSpec, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "sample_rate": self.sample_rate, "tags": list(self.tags)}
        if self.url:
            out["url"] = self.url
        out["fallback"] = [f.as_dict() for f in self.fallback]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DestinationSpec:
        return cls(
            name=data["name"],
            sample_rate=float(data.get("sample_rate", 1.0)),
            tags=tuple(data.get("tags") or ()),
            url=data.get("url") or None,
            fallback=tuple(cls.from_dict(f) for f in data.get("fallback") or ()),
        )


@dataclass(frozen=True, slots=True)
class CompiledRule:
    name: str
    priority: int
    predicate: Predicate
    destinations: tuple[DestinationSpec, ...]
    sample_rate: float = 1.0
    stop: bool = False
    enabled: bool = True
    id: int | None = None


@dataclass(frozen=True, slots=True)
class SamplingRule:
    condition: str
    predicate: Predicate
    sample_rate: float


@dataclass(frozen=True, slots=True)
class CompiledRouting:
    """A team's rules (sorted by priority) and sampling policy, ready to evaluate."""

    rules: tuple[CompiledRule, ...] = ()
    default_sample_rate: float = 1.0
    sampling_rules: tuple[SamplingRule, ...] = ()
    version: int = 0


@dataclass(frozen=True, slots=True)
class Decision:
    destination: DestinationSpec
    rule: str
    kept: bool
    rate: float  # effective rate: policy rate × rule rate × destination rate
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "destination": self.destination.name,
            "rule": self.rule,
            "kept": self.kept,
            "rate": self.rate,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class RoutingResult:
    decisions: tuple[Decision, ...] = ()
    sample_point: float = 0.0
    policy_rate: float = 1.0
    policy_reason: str = ""
    matched_rules: tuple[str, ...] = field(default=())

    @property
    def kept(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.kept)

    @property
    def destinations(self) -> list[str]:
        return [d.destination.name for d in self.decisions if d.kept]


def sample_point(trace_id: str) -> float:
    """A uniform number in [0, 1) fixed by the trace id: the same trace samples the same everywhere."""
    digest = hashlib.blake2b(trace_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def policy_rate(ctx: Mapping[str, Any], routing: CompiledRouting) -> tuple[float, str]:
    for rule in routing.sampling_rules:
        if rule.predicate(ctx):
            return rule.sample_rate, f"sampling rule '{rule.condition}'"
    return routing.default_sample_rate, "default sample rate"


def route(ctx: Mapping[str, Any], routing: CompiledRouting) -> RoutingResult:
    """Evaluate rules in priority order; every matching rule adds its destinations (first wins on a
    repeat); a matching rule with ``stop`` ends evaluation. ``ctx`` is `TraceRecord.condition_context()`.
    """
    u = sample_point(str(ctx["id"]))
    base_rate, base_reason = policy_rate(ctx, routing)
    seen: set[str] = set()
    decisions: list[Decision] = []
    matched: list[str] = []
    for rule in routing.rules:
        if not rule.enabled or not rule.predicate(ctx):
            continue
        matched.append(rule.name)
        for dest in rule.destinations:
            if dest.name in seen:
                continue
            seen.add(dest.name)
            rate = base_rate * rule.sample_rate * dest.sample_rate
            kept = u < rate
            if kept:
                reason = f"matched rule '{rule.name}'"
            else:
                reason = f"sampled out: {u:.4f} ≥ rate {rate:g} ({base_reason} {base_rate:g}"
                reason += f" × rule {rule.sample_rate:g} × destination {dest.sample_rate:g})"
            decisions.append(Decision(dest, rule.name, kept, rate, reason))
        if rule.stop:
            break
    return RoutingResult(tuple(decisions), u, base_rate, base_reason, tuple(matched))
