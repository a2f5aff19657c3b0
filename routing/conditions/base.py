"""What both condition forms share: the variables, the error, the compiled condition and its bindings."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from traces.records import TraceRecord
from traces.usage import DETAIL_FIELDS

if TYPE_CHECKING:
    import cel

# The `cel` package imports its command line (typer, prompt_toolkit) with its engine: ~0.3 CPU-s
# that every process would pay at start-up (bin/run starts seven). Imported where a CEL condition
# is compiled or first evaluated instead.

# The names a condition may use: exactly what the router evaluates against.
VARIABLES: frozenset[str] = frozenset(TraceRecord(trace_id="", team_id=0, model="").condition_context())
NUMERIC_VARIABLES = frozenset(
    {"cost", "latency_ms", "total_tokens", "prompt_tokens", "completion_tokens", "time_to_first_token_ms"}
    | set(DETAIL_FIELDS)
)
STRING_VARIABLES = frozenset(
    {"model", "provider", "status", "environment", "error_type", "error_message", "service_name", "session_id"}
    | {"user_id", "source", "id", "run_id", "parent_id", "kind", "name"}
)
BOOLEAN_VARIABLES = frozenset({"error", "unpriced", "usage_estimated"})
# Why a condition on the cost of an unpriced trace does not match (both forms say the same).
UNPRICED_REASON = "cost unknown: model unpriced"
# … and on the cost of a span that is no call (an agent, a tool …): it has none, and is never "unpriced".
NO_COST_REASON = "no cost: not an LLM or embedding call"
COST_REASONS = frozenset({UNPRICED_REASON, NO_COST_REASON})


def missing_cost_reason(values: Mapping[str, Any]) -> str:
    """Why a condition on ``cost`` did not match a trace without one."""
    kind = values.get("kind", "llm")
    return UNPRICED_REASON if kind in ("llm", "embedding") else NO_COST_REASON


STATUSES = ("success", "error", "rate_limited")
# A span's kinds (`traces.models.Kind`): an object condition's `kind` must name one of them.
KINDS = ("llm", "embedding", "agent", "tool", "retrieval", "chain", "workflow", "guardrail", "event", "other")


class ConditionError(ValueError):
    """A condition that cannot compile. ``position`` is the 1-based column (character offset + 1)
    in a string condition, None for the object form; ``path`` is the key inside an object
    condition (``"cost"``, ``"metadata.env"``), ``""`` for a string condition."""

    def __init__(self, message: str, position: int | None = None, path: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.position = position
        self.path = path

    def __str__(self) -> str:
        return self.message


class Condition:
    """A compiled condition. ``pred(ctx)`` → bool; ``pred.evaluate(ctx)`` → (matched, error).

    ``ctx`` is a condition context (a mapping) or a `Bindings` that shares one CEL activation
    across every CEL predicate evaluated for the same trace.
    """

    __slots__ = ("source", "variables")

    def __init__(self, source: str, variables: frozenset[str]) -> None:
        self.source = source
        self.variables = variables

    def evaluate(self, ctx: Mapping[str, Any] | Bindings) -> tuple[bool, str | None]:
        raise NotImplementedError

    def __call__(self, ctx: Mapping[str, Any] | Bindings) -> bool:
        return self.evaluate(ctx)[0]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.source!r}>"


class Always(Condition):
    __slots__ = ()

    def __init__(self) -> None:
        super().__init__("", frozenset())

    def evaluate(self, ctx: Mapping[str, Any] | Bindings) -> tuple[bool, str | None]:
        return True, None


ALWAYS = Always()


class Broken(Condition):
    """A stored condition that no longer compiles (edited around the API): it never matches, and
    says why, rather than failing every trace's ingest."""

    __slots__ = ("error",)

    def __init__(self, source: str, error: str) -> None:
        super().__init__(source, frozenset())
        self.error = error

    def evaluate(self, ctx: Mapping[str, Any] | Bindings) -> tuple[bool, str | None]:
        return False, f"the condition does not compile: {self.error}"


class Bindings:
    """One trace's condition context, plus its CEL activation built once on first use.

    Converting Python values to CEL costs more than evaluating a typical rule, so the router
    wraps each trace's context in one of these and every CEL predicate shares the conversion.
    """

    __slots__ = ("ctx", "names", "_activation")

    def __init__(self, ctx: Mapping[str, Any], names: frozenset[str] | None = None) -> None:
        self.ctx = ctx
        self.names = names
        self._activation: cel.Context | None = None

    def activation(self) -> cel.Context:
        if self._activation is None:
            import cel

            names = self.names if self.names is not None else VARIABLES
            self._activation = cel.Context(variables=cel_variables(self.ctx, names))
        return self._activation


def cel_variables(ctx: Mapping[str, Any], names: frozenset[str] | tuple[str, ...]) -> dict[str, Any]:
    """The CEL activation. An unknown cost (an unpriced model) is left out rather than given as
    null: any use of it is then an error, so ``cost != 1`` does not match either, while
    ``unpriced || cost > 0.5`` still does (CEL's ``||`` absorbs an error beside a true)."""
    return {n: to_cel(ctx[n]) for n in names if n in ctx and not (n == "cost" and ctx[n] is None)}


def to_cel(value: Any) -> Any:
    """A context value as CEL sees it: every number a double (bools stay bools)."""
    kind = type(value)
    if kind is str or kind is float or kind is bool or value is None:
        return value
    if kind is int or kind is Decimal:
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): to_cel(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if all(type(v) is str for v in value):
            return value if kind is list else list(value)
        return [to_cel(v) for v in value]
    if isinstance(value, bool | str | float):
        return value
    if isinstance(value, int | Decimal):
        return float(value)
    return str(value)
