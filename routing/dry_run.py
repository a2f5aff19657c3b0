"""The dry run: where would these traces go, and why, under the saved or a candidate rule set.

Each trace is normalised and priced like an ingested one (cost conditions see the computed cost);
nothing is stored or sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from accounts.principals import KeyPrincipal
from config.problems import Problem
from traces.normalize import TraceValidationError, normalize_trace
from traces.records import TraceRecord

from . import edits, selectors
from .edits import RuleNotFound, RuleSetInvalid
from .router import route
from .serializers import MAX_TEST_TRACES, RoutingRuleSetSerializer, SamplingPolicySerializer
from .validation import rules_context, validation_problem

TEST_KEYS = frozenset({"trace", "traces", "rules", "rule", "sampling"})


@dataclass(frozen=True, slots=True)
class DryRunRequest:
    """A dry run's body, read: the raw traces, the candidate rules (``rules``: a whole set; ``rule``:
    one rule in place of the stored one, or added) and sampling (None: the saved ones), and how
    error paths name a trace (``prefix``; ``single``: one trace, no index)."""

    items: Sequence[Any]
    rules: Any = None
    sampling: Any = None
    rule: Any = None
    prefix: str = "traces"
    single: bool = False


def dry_run_request(data: Any) -> DryRunRequest:
    """The body of `POST /routing/test`: one trace, a list of traces, or ``{"trace"|"traces", "rules"?
    or "rule"?, "sampling"?}``. A 400 (or 413 past `MAX_TEST_TRACES`) for any other shape."""
    if isinstance(data, list):
        request = DryRunRequest(items=data)
    elif isinstance(data, Mapping) and ("traces" in data or "trace" in data):
        unknown = sorted(str(k) for k in data if k not in TEST_KEYS)
        if unknown:
            raise Problem(
                400,
                "validation",
                f"Unknown field '{unknown[0]}'; a dry run takes {', '.join(sorted(TEST_KEYS))}.",
                title="Invalid request",
                errors={k: ["Unknown field."] for k in unknown},
            )
        if "traces" in data and "trace" in data:
            raise Problem(400, "validation", "Give 'trace' or 'traces', not both.", title="Invalid request")
        rule = data.get("rule")
        if rule is not None and data.get("rules") is not None:
            raise _bad("rule", "Give 'rules' (a whole rule set) or 'rule' (one rule), not both.")
        if rule is not None and not isinstance(rule, Mapping):
            raise _bad("rule", "Must be a rule object.")
        rules, sampling = data.get("rules"), data.get("sampling")
        if "traces" in data:
            if not isinstance(data["traces"], list):
                raise _bad("traces", "Must be a list of traces.")
            request = DryRunRequest(items=data["traces"], rules=rules, sampling=sampling, rule=rule)
        else:
            request = DryRunRequest(
                items=[data["trace"]], rules=rules, sampling=sampling, rule=rule, prefix="trace", single=True
            )
    elif isinstance(data, Mapping):
        candidates = sorted(k for k in ("rules", "rule", "sampling") if k in data)
        if candidates:  # beside a bare trace they would read as trace fields and be ignored
            raise _bad(candidates[0], 'Candidate rules and sampling go with {"trace": {...}} or {"traces": [...]}.')
        request = DryRunRequest(items=[data], prefix="", single=True)
    else:
        raise _bad("", 'The body must be a trace object, or {"traces": [...]}.')
    if not request.items:
        raise _bad(request.prefix, "Send at least one trace.")
    if len(request.items) > MAX_TEST_TRACES:
        raise Problem(
            413,
            "too-many-traces",
            f"A dry run takes at most {MAX_TEST_TRACES} traces; this one has {len(request.items)}.",
            limit_traces=MAX_TEST_TRACES,
        )
    return request


def _bad(field: str, message: str) -> Problem:
    detail = f"{field}: {message}" if field else message
    return Problem(400, "validation", detail, title="Invalid request", errors={field: [message]})


def rule_problem(exc: RuleSetInvalid | RuleNotFound) -> Problem:
    """A bad candidate ``rule`` as the API's 400: its own errors under ``rule.<field>``, the stored
    rules' (which it was validated with) under their ``rules[i]`` paths, named in the detail."""
    if isinstance(exc, RuleNotFound):
        return _bad("rule.id", f"No routing rule {exc.args[0]} in this team: leave 'id' out to try a new rule.")
    errors = {
        "rule" + (f".{path}" if path and not path.startswith("[") else path): messages
        for path, messages in exc.for_rule().items()
    }
    mine = [f"{path}: {messages[0]}" for path, messages in errors.items()]
    detail = next(iter(mine + exc.elsewhere()), "Invalid rule.")
    return Problem(400, "validation", detail, title="Invalid routing rule", errors={**errors, **exc.others()})


def routing_dry_run(
    *,
    principal: KeyPrincipal,
    items: Sequence[Any],
    rules: Any,
    sampling: Any,
    prefix: str = "traces",
    single: bool = False,
    rule: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Route ``items`` (raw trace objects) without storing them; ``rules``/``sampling`` (raw, or None
    for the saved ones) are validated as a PUT would validate them. ``rule`` (the API's rule shape):
    the saved rules with this one in place of the stored rule its ``id`` names, or added after the
    last (`edits.rule_trial`); a bad one raises `RuleSetInvalid` or `RuleNotFound`, as saving it
    would (the rule form puts them beside its fields, `rule_problem` makes them the API's 400).
    ``prefix`` and ``single`` say how error paths name a trace (``traces[2].model``, or
    ``trace.model`` for a single one)."""
    compiled, rules_version, sampling_version = _routing(principal.team_id, rules, sampling, rule)

    errors: dict[str, list[str]] = {}
    status = 400
    records = []
    for i, item in enumerate(items):
        where = prefix if single else f"{prefix}[{i}]"
        if not isinstance(item, Mapping):
            errors.setdefault(where, []).append("Must be a trace object.")
            continue
        try:
            records.append(
                normalize_trace(item, team_id=principal.team_id, environment=principal.environment, source="api")
            )
        except TraceValidationError as exc:
            status = 413 if exc.status == 413 else status
            for field, messages in exc.errors.items():
                errors.setdefault(f"{where}.{field}" if where else field, []).extend(messages)
    if errors:
        path, messages = next(iter(errors.items()))
        detail = f"{path}: {messages[0]}" if path else messages[0]
        slug = "payload-too-large" if status == 413 else "validation"
        raise Problem(status, slug, detail, title="Invalid trace", errors=errors)

    results = [_result_json(record, compiled) for record in records]
    return {"rules_version": rules_version, "sampling_version": sampling_version, "results": results}


def routing_dry_run_stored(
    *, team_id: int, records: Sequence[TraceRecord], rule: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The same answer for traces already stored (`TraceRecord.from_trace`), under the saved rules
    (with ``rule`` tried in, as in `routing_dry_run`): their own ids, sources and stored costs, so
    the sampling points and cost conditions are the ones ingest saw (only the rules may differ)."""
    compiled, rules_version, sampling_version = _routing(team_id, None, None, rule)
    results = [_result_json(record, compiled) for record in records]
    return {"rules_version": rules_version, "sampling_version": sampling_version, "results": results}


def _result_json(record: TraceRecord, compiled: Any) -> dict[str, Any]:
    ctx = record.condition_context()
    result = route(ctx, compiled, explain=True)
    return {
        "trace_id": record.trace_id,
        "trace": ctx,
        "destinations": result.destinations,
        "sampled_out": [_decision_json(d) for d in result.sampled_out],
        "decisions": [_decision_json(d) for d in result.decisions],
        "matched_rules": list(result.matched_rules),
        "sample_point": result.sample_point,
        "policy": {"rate": result.policy_rate, "reason": result.policy_reason},
        "evaluations": [e.as_dict() for e in result.evaluations],
        "errors": [{"rule": rule, "error": error} for rule, error in result.errors],
    }


def _routing(
    team_id: int, rules: Any, sampling: Any, rule: Mapping[str, Any] | None
) -> tuple[Any, int | None, int | None]:
    if rules is None and sampling is None and rule is None:
        compiled = selectors.load_compiled_routing(team_id)
        return compiled, compiled.version, compiled.sampling_version
    if rule is not None:
        rule_dicts: list[Any] = edits.rule_trial(team_id=team_id, rule=rule)
        rules_version: int | None = None
    elif rules is not None:
        serializer = RoutingRuleSetSerializer(data={"rules": rules}, context=rules_context(team_id))
        if not serializer.is_valid():
            raise validation_problem(serializer.errors, {"rules": rules}, title="Invalid routing rules")
        rule_dicts = serializer.validated_data["rules"]
        rules_version = None
    else:
        rule_dicts = [selectors.rule_as_dict(r) for r in selectors.routing_rules(team_id)]
        rules_version = selectors.rule_set(team_id).version
    if sampling is not None:
        policy_serializer = SamplingPolicySerializer(data=sampling)
        if not policy_serializer.is_valid():
            raise validation_problem(
                policy_serializer.errors, sampling, title="Invalid sampling policy", prefix="sampling"
            )
        default_rate = policy_serializer.validated_data["default_sample_rate"]
        sampling_rules = policy_serializer.validated_data["rules"]
        sampling_version: int | None = None
    else:
        policy = selectors.sampling_policy(team_id)
        default_rate, sampling_rules, sampling_version = policy.default_sample_rate, policy.rules, policy.version
    compiled = selectors.compile_routing(rule_dicts, default_sample_rate=default_rate, sampling_rules=sampling_rules)
    return compiled, rules_version, sampling_version


def _decision_json(decision: Any) -> dict[str, Any]:
    return {**decision.as_dict(), "spec": decision.destination.as_dict()}
