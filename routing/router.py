"""The router: a pure function of (trace, compiled rules, sampling policy) → decisions with reasons.

No ORM and no I/O here, so the ingest path, the dry-run endpoint and the tests all run the
same code. Conditions arrive already compiled to predicates (see `routing.conditions`).

Semantics (docs/routing.md):

- Rules run in priority order (lower first); disabled rules are skipped.
- Every matching rule adds its destinations. A destination is delivered once per trace: the
  first rule that *keeps* it (after sampling) decides, so a later "all errors" rule still sends
  an error that an earlier 10% rule sampled out. If no rule keeps it, the first sampled-out
  decision is reported.
- A matching rule with ``stop`` ends evaluation.
- Sampling is consistent: ``u = sample_point(run id)`` in [0, 1) (a trace sent without a run is a
  run of its own: its id); a destination keeps the trace when ``u < policy rate × rule rate ×
  destination rate``, so every span of a run is kept or dropped together at the same rate.
- A condition that fails at run time (a missing metadata key …) does not match; the error is
  reported in ``RoutingResult.errors`` and, with ``explain=True``, in the rule's evaluation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .conditions import ALWAYS, COST_REASONS, Bindings, CelCondition, Condition


@dataclass(frozen=True, slots=True)
class DestinationSpec:
    """Where a rule sends traces: an integration named by name or platform, with its own options.
    ``webhook`` with a ``url`` is an ad-hoc webhook, which carries nothing of any integration
    (`integrations.selectors.resolve_target`)."""

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
    predicate: Condition
    destinations: tuple[DestinationSpec, ...]
    sample_rate: float = 1.0
    stop: bool = False
    enabled: bool = True
    id: int | None = None


@dataclass(frozen=True, slots=True)
class SamplingRule:
    condition: str
    predicate: Condition
    sample_rate: float


def _cel_names(predicates: list[Condition]) -> frozenset[str]:
    """The names the CEL conditions read: the per-trace activation converts only these."""
    names: set[str] = set()
    for predicate in predicates:
        if isinstance(predicate, CelCondition):
            names.update(predicate.variables)
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class CompiledRouting:
    """A team's rules (sorted by priority) and sampling policy, ready to evaluate."""

    rules: tuple[CompiledRule, ...] = ()
    default_sample_rate: float = 1.0
    sampling_rules: tuple[SamplingRule, ...] = ()
    version: int = 0  # the rule set's version
    sampling_version: int = 0
    # The context names any condition reads: the CEL activation is built from these only.
    variables: frozenset[str] = field(init=False, default=frozenset())

    def __post_init__(self) -> None:
        predicates = [r.predicate for r in self.rules] + [s.predicate for s in self.sampling_rules]
        object.__setattr__(self, "variables", _cel_names(predicates))


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
class RuleEvaluation:
    """How one rule fared for one trace (collected with ``route(..., explain=True)``)."""

    rule: str
    priority: int
    matched: bool | None  # None: not evaluated (disabled, or an earlier rule stopped evaluation)
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "priority": self.priority, "matched": self.matched, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class RoutingResult:
    decisions: tuple[Decision, ...] = ()
    sample_point: float = 0.0
    policy_rate: float = 1.0
    policy_reason: str = ""
    matched_rules: tuple[str, ...] = field(default=())
    errors: tuple[tuple[str, str], ...] = ()  # (rule or sampling condition, error): counted as no match
    evaluations: tuple[RuleEvaluation, ...] = ()  # only with explain=True

    @property
    def kept(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.kept)

    @property
    def sampled_out(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if not d.kept)

    @property
    def destinations(self) -> list[str]:
        return [d.destination.name for d in self.decisions if d.kept]

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sample_point": self.sample_point,
            "policy": {"rate": self.policy_rate, "reason": self.policy_reason},
            "matched_rules": list(self.matched_rules),
            "decisions": [d.as_dict() for d in self.decisions],
            "errors": [{"rule": rule, "error": error} for rule, error in self.errors],
        }
        if self.evaluations:
            out["evaluations"] = [e.as_dict() for e in self.evaluations]
        return out


def sample_point(trace_id: str) -> float:
    """A uniform number in [0, 1) fixed by the trace id: the same trace samples the same everywhere."""
    digest = hashlib.blake2b(trace_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _policy(routing: CompiledRouting, bindings: Bindings, errors: list[tuple[str, str]]) -> tuple[float, str]:
    for rule in routing.sampling_rules:
        matched, error = rule.predicate.evaluate(bindings)
        if error is not None:
            errors.append((f"sampling: {rule.condition}", error))
        if matched:
            return rule.sample_rate, f"sampling rule '{rule.condition}'"
    return routing.default_sample_rate, "default sample rate"


def policy_rate(ctx: Mapping[str, Any], routing: CompiledRouting) -> tuple[float, str]:
    """The sampling policy's rate for this trace: the first matching policy rule, else the default."""
    return _policy(routing, Bindings(ctx, routing.variables), [])


def route(ctx: Mapping[str, Any], routing: CompiledRouting, *, explain: bool = False) -> RoutingResult:
    """Decide where a trace goes. ``ctx`` is `TraceRecord.condition_context()`.

    ``explain`` also records how every rule fared (the dry-run endpoint); ingest leaves it off.
    """
    # The run's sample point (a span sent without a run is a run of its own): every span of a run
    # draws the same u, so a rate keeps or drops the run whole (and the SDKs sample by the same id).
    u = sample_point(str(ctx.get("run_id") or ctx["id"]))
    bindings = Bindings(ctx, routing.variables)
    errors: list[tuple[str, str]] = []
    base_rate, base_reason = _policy(routing, bindings, errors)
    # destination name → index into decisions
    placed: dict[str, int] = {}
    decisions: list[Decision] = []
    matched: list[str] = []
    evaluations: list[RuleEvaluation] = []
    stopped_by: str | None = None
    for rule in routing.rules:
        if stopped_by is not None:
            if not explain:
                break
            evaluations.append(RuleEvaluation(rule.name, rule.priority, None, f"not evaluated: '{stopped_by}' stops"))
            continue
        if not rule.enabled:
            if explain:
                evaluations.append(RuleEvaluation(rule.name, rule.priority, None, "disabled"))
            continue
        ok, error = rule.predicate.evaluate(bindings)
        if error is not None and error not in COST_REASONS:  # an unknown cost is a fact, not a fault
            errors.append((rule.name, error))
        if not ok:
            if explain:
                if error in COST_REASONS:
                    why = f"condition did not match: {error}"
                else:
                    why = f"condition error, counted as no match: {error}" if error else "condition did not match"
                evaluations.append(RuleEvaluation(rule.name, rule.priority, False, why))
            continue
        matched.append(rule.name)
        if explain:
            has_condition = rule.predicate is not ALWAYS
            why = "condition matched" if has_condition else "no condition: matches every trace"
            evaluations.append(RuleEvaluation(rule.name, rule.priority, True, why + ("; stop" if rule.stop else "")))
        for dest in rule.destinations:
            rate = base_rate * rule.sample_rate * dest.sample_rate
            kept = u < rate
            where = placed.get(dest.name)
            if where is not None:
                earlier = decisions[where]
                if earlier.kept or not kept:
                    continue  # already sent, or this rule would sample it out too
                reason = f"matched rule '{rule.name}' (rule '{earlier.rule}' sampled it out at {earlier.rate:g})"
                decisions[where] = Decision(dest, rule.name, True, rate, reason)
                continue
            placed[dest.name] = len(decisions)
            if kept:
                reason = f"matched rule '{rule.name}'"
                if rate < 1.0:
                    reason += f", kept by sampling ({u:.4f} < rate {rate:g})"
            else:
                reason = (
                    f"sampled out: {u:.4f} ≥ rate {rate:g} ({base_reason} {base_rate:g}"
                    f" × rule {rule.sample_rate:g} × destination {dest.sample_rate:g})"
                )
            decisions.append(Decision(dest, rule.name, kept, rate, reason))
        if rule.stop:
            stopped_by = rule.name
    return RoutingResult(tuple(decisions), u, base_rate, base_reason, tuple(matched), tuple(errors), tuple(evaluations))
