"""The condition compiler: both spellings, every object key and operator, CEL semantics, errors."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.conditions import (
    ALWAYS,
    VARIABLES,
    Bindings,
    ConditionError,
    compile_condition,
    doubles_for_ints,
    json_equal,
    tokenize,
)
from traces.records import TraceRecord


def ctx(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "trace_id": "trc_test",
        "team_id": 1,
        "model": "gpt-4o",
        "provider": "openai",
        "prompt_tokens": 100,
        "completion_tokens": 50,
        "total_tokens": 150,
        "latency_ms": 420,
        "cost": Decimal("0.06"),
        "status": "success",
        "tags": ("beta", "checkout"),
        "metadata": {"env": "prod", "tier": 2, "user": {"plan": "pro"}, "flag": True},
        "environment": "production",
    }
    fields.update(overrides)
    return TraceRecord(**fields).condition_context()


def matches(cond: Any, **overrides: Any) -> bool:
    predicate = compile_condition(cond)
    plain = predicate(ctx(**overrides))
    shared = predicate(Bindings(ctx(**overrides)))
    assert plain == shared, "a predicate must not depend on how its context is passed"
    return plain


def error_of(cond: Any) -> ConditionError:
    with pytest.raises(ConditionError) as info:
        compile_condition(cond)
    return info.value


# --- No condition ----------------------------------------------------------------------------


@pytest.mark.parametrize("cond", [None, "", "   ", {}])
def test_it_matches_every_trace_without_a_condition(cond):
    assert compile_condition(cond) is ALWAYS
    assert matches(cond)


@pytest.mark.parametrize("cond", [42, 1.5, True, ["model"]])
def test_it_refuses_a_condition_that_is_neither_string_nor_object(cond):
    assert "object" in error_of(cond).message


# --- The object form: every key ----------------------------------------------------------------

OBJECT_CASES = [
    # model: exact, prefix wildcard, list of either
    ({"model": "gpt-4o"}, {}, True),
    ({"model": "gpt-4"}, {}, False),
    ({"model": "gpt-4*"}, {}, True),
    ({"model": "claude*"}, {}, False),
    ({"model": "*"}, {}, True),
    ({"model": ["claude-3", "gpt-4o"]}, {}, True),
    ({"model": ["claude*", "mistral*"]}, {}, False),
    ({"model": "GPT-4o"}, {}, False),  # model names are exact
    # provider: case-insensitive (providers are lowercase names)
    ({"provider": "openai"}, {}, True),
    ({"provider": "OpenAI"}, {}, True),
    ({"provider": "anthropic"}, {}, False),
    ({"provider": "open*"}, {}, True),
    # status
    ({"status": "success"}, {}, True),
    ({"status": "error"}, {"status": "error"}, True),
    ({"status": "error"}, {"status": "rate_limited"}, False),
    ({"status": ["error", "rate_limited"]}, {"status": "rate_limited"}, True),
    # error: true for error and rate_limited
    ({"error": True}, {"status": "error"}, True),
    ({"error": True}, {"status": "rate_limited"}, True),
    ({"error": True}, {}, False),
    ({"error": False}, {}, True),
    ({"error": False}, {"status": "error"}, False),
    # environment and the other string keys
    ({"environment": "production"}, {}, True),
    ({"environment": "prod*"}, {}, True),
    ({"environment": "development"}, {}, False),
    ({"error_type": "timeout"}, {"status": "error", "error_type": "timeout"}, True),
    ({"error_message": "rate*"}, {"status": "error", "error_message": "rate limit hit"}, True),
    ({"service_name": "checkout"}, {"service_name": "checkout"}, True),
    ({"user_id": "u1"}, {"user_id": "u2"}, False),
    ({"session_id": "s*"}, {"session_id": "s-9"}, True),
    ({"source": "proxy"}, {"source": "proxy"}, True),
    ({"unpriced": True}, {"unpriced": True}, True),
    ({"unpriced": True}, {}, False),
    # tags: every listed tag must be present
    ({"tags": "beta"}, {}, True),
    ({"tags": ["beta", "checkout"]}, {}, True),
    ({"tags": ["beta", "missing"]}, {}, False),
    ({"tags": "beta"}, {"tags": ()}, False),
    # metadata: equality by key or dotted path, JSON equality
    ({"metadata.env": "prod"}, {}, True),
    ({"metadata.env": "dev"}, {}, False),
    ({"metadata.missing": "x"}, {}, False),
    ({"metadata.tier": 2}, {}, True),
    ({"metadata.tier": 2.0}, {}, True),
    ({"metadata.tier": "2"}, {}, False),
    ({"metadata.flag": True}, {}, True),
    ({"metadata.flag": 1}, {}, False),
    ({"metadata.user.plan": "pro"}, {}, True),
    ({"metadata.user.plan.deeper": "pro"}, {}, False),
    ({"metadata.user": {"plan": "pro"}}, {}, True),
    ({"metadata": {"env": "prod", "tier": 2}}, {}, True),
    ({"metadata": {"env": "prod", "tier": 3}}, {}, False),
    ({"metadata.env": None}, {}, False),
    # several keys: all must hold
    ({"model": "gpt-4*", "cost": ">0.05", "environment": "production"}, {}, True),
    ({"model": "gpt-4*", "cost": ">0.5"}, {}, False),
]


@pytest.mark.parametrize(("cond", "overrides", "expected"), OBJECT_CASES)
def test_object_conditions(cond, overrides, expected):
    assert matches(cond, **overrides) is expected


NUMBER_CASES = [
    ("cost", ">0.05", True),
    ("cost", "> 0.05", True),
    ("cost", ">0.06", False),
    ("cost", ">=0.06", True),
    ("cost", "<0.06", False),
    ("cost", "<=0.06", True),
    ("cost", "==0.06", True),
    ("cost", "=0.06", True),
    ("cost", "!=0.06", False),
    ("cost", "0.06", True),
    ("cost", 0.06, True),
    ("cost", ">1", False),
    ("cost", ">1e-3", True),
    ("cost", [">0.01", "<0.1"], True),
    ("cost", [">0.01", "<0.05"], False),
    ("latency_ms", ">400", True),
    ("latency_ms", "<=100", False),
    ("latency_ms", 420, True),
    ("total_tokens", "==150", True),
    ("total_tokens", ">=151", False),
    ("prompt_tokens", ">99", True),
    ("completion_tokens", "<50", False),
    ("time_to_first_token_ms", "==0", True),
]


@pytest.mark.parametrize(("key", "value", "expected"), NUMBER_CASES)
def test_number_comparisons(key, value, expected):
    assert matches({key: value}) is expected


@pytest.mark.parametrize(
    "cond",
    [
        {"cost": "==0"},
        {"cost": ">0.5"},
        {"cost": "<0.5"},
        {"cost": "!=1"},
        "cost == 0.0",
        "cost > 0.5",
        "cost < 0.5",
        "!(cost > 0.5)",
    ],
)
def test_an_unpriced_cost_does_not_compare_as_a_number(cond):
    assert not matches(cond, cost=None, unpriced=True)
    assert not matches(cond, cost=Decimal("0"), unpriced=True)  # a stored 0 of an unpriced trace is unknown too
    matched, error = compile_condition(cond).evaluate(ctx(cost=None, unpriced=True))
    assert (matched, error) == (False, "cost unknown: model unpriced")


@pytest.mark.parametrize("cond", [{"unpriced": True}, "unpriced", "unpriced || cost > 0.5", "cost > 0.5 || unpriced"])
def test_unpriced_is_a_condition_in_both_forms(cond):
    assert matches(cond, cost=None, unpriced=True)
    assert not matches(cond, cost=Decimal("0.06"))


@pytest.mark.parametrize("cond", [{"usage_estimated": True}, "usage_estimated", "!usage_estimated == false"])
def test_usage_estimated_is_a_condition_in_both_forms(cond):
    assert matches(cond, usage_estimated=True)
    assert not matches(cond)


@pytest.mark.parametrize(
    ("cond", "path", "fragment"),
    [
        ({"modle": "gpt-4"}, "modle", "did you mean 'model'"),
        ({"colour": "red"}, "colour", "Known keys"),
        ({"cost": "more than 5"}, "cost", "cannot read"),
        ({"cost": ">"}, "cost", "cannot read"),
        ({"cost": True}, "cost", "number or a comparison"),
        ({"cost": []}, "cost", "at least one"),
        ({"cost": {"gt": 1}}, "cost", "number or a comparison"),
        ({"latency_ms": float("nan")}, "latency_ms", "finite"),
        ({"error": "yes"}, "error", "true or false"),
        ({"unpriced": 1}, "unpriced", "true or false"),
        ({"status": "failed"}, "status", "success, error, rate_limited"),
        ({"model": ""}, "model", "non-empty string"),
        ({"model": 4}, "model", "non-empty string"),
        ({"model": []}, "model", "non-empty string"),
        ({"tags": [1]}, "tags", "non-empty string"),
        ({"metadata": "env"}, "metadata", "object"),
        ({"metadata": {}}, "metadata", "object"),
        ({"metadata..env": "x"}, "metadata..env", "key path"),
    ],
)
def test_it_refuses_bad_object_conditions_naming_the_key(cond, path, fragment):
    error = error_of(cond)
    assert error.path == path
    assert error.position is None
    assert fragment in error.message


# --- The string form: CEL ----------------------------------------------------------------------

CEL_CASES = [
    # DESIGN.md's examples
    ('model == "gpt-4o"', {}, True),
    ('model == "gpt-4"', {}, False),
    ("cost > 0.05", {}, True),
    ("cost > 0.5", {}, False),
    ("error == true", {"status": "error"}, True),
    ("error == true", {}, False),
    ("error == false", {}, True),
    ('metadata.env == "prod"', {}, True),
    ('metadata.env == "dev"', {}, False),
    ('"beta" in tags', {}, True),
    ('"gamma" in tags', {}, False),
    ('model == "gpt-4o" && cost > 0.05', {}, True),
    ('model == "gpt-4o" && cost > 0.5', {}, False),
    ('model == "claude" || cost > 0.05', {}, True),
    ('model == "claude" || cost > 0.5', {}, False),
    ("!error", {}, True),
    ("!error", {"status": "rate_limited"}, False),
    ('!(model == "gpt-4o")', {}, False),
    # numbers are doubles: integer literals compare and compute as users expect
    ("cost > 0", {}, True),
    ("cost > 1", {}, False),
    ("cost < 1", {}, True),
    ("cost == 0", {"cost": None}, False),
    ("cost * 1000 > 5", {}, True),
    ("cost * 1000 > 100", {}, False),
    ("latency_ms / 1000 > 0.4", {}, True),
    ("latency_ms == 420", {}, True),
    ("latency_ms == 420.0", {}, True),
    ("total_tokens > 100", {}, True),
    ("prompt_tokens + completion_tokens == total_tokens", {}, True),
    ("total_tokens - prompt_tokens == 50", {}, True),
    ("metadata.tier == 2", {}, True),
    ("metadata.tier + 1 == 3", {}, True),
    ("metadata.tier > 1.5", {}, True),
    ("[1, 2, 150].exists(n, n == total_tokens)", {}, True),
    ("total_tokens in [150, 300]", {}, True),
    ("int(total_tokens) % 2 == 0", {}, True),
    ("double(size(tags)) + 1 == 3", {}, True),
    ("size(tags) == 2", {}, True),
    ("size(tags) > 1", {}, True),
    # strings, lists, maps
    ('model.startsWith("gpt-4")', {}, True),
    ('model.endsWith("o")', {}, True),
    ('model.contains("4")', {}, True),
    ('model.matches("^gpt-[0-9]o?$")', {}, True),
    ('provider in ["openai", "azure"]', {}, True),
    ('tags[0] == "beta"', {}, True),
    ('tags.exists(t, t.startsWith("check"))', {}, True),
    ("tags.all(t, t.size() > 3)", {}, True),
    ('has(metadata.env) && metadata.env == "prod"', {}, True),
    ('has(metadata.nope) && metadata.nope == "prod"', {}, False),
    ('!has(metadata.nope) || metadata.nope != "prod"', {}, True),
    ('"env" in metadata', {}, True),
    ('metadata.user.plan == "pro"', {}, True),
    ('status == "rate_limited"', {"status": "rate_limited"}, True),
    ('environment == "production"', {}, True),
    ("unpriced", {"unpriced": True}, True),
    ("type(metadata.tier) == double", {}, True),
    ('source == "api"', {}, True),
    ('id.startsWith("trc_")', {}, True),
    ("true", {}, True),
    ("false", {}, False),
    ('model == "gpt-4o"\n  && cost > 0.05 // comments work', {}, True),
    ("model == 'gpt-4o'", {}, True),
    ('model == r"gpt-4o"', {}, True),
    ('error_message.contains("quota")', {"status": "error", "error_message": "over quota"}, True),
]


@pytest.mark.parametrize(("expr", "overrides", "expected"), CEL_CASES)
def test_cel_conditions(expr, overrides, expected):
    assert matches(expr, **overrides) is expected


@pytest.mark.parametrize(
    ("expr", "expected_error"),
    [
        ('metadata.env == "prod"', "no such key 'env'"),
        ('metadata.env != "prod"', "no such key 'env'"),
        ('!(metadata.env == "prod")', "no such key 'env'"),
        ('metadata.a.b == "x"', "no such key 'a'"),
        ("metadata.n > 1", "no such key 'n'"),
    ],
)
def test_a_missing_metadata_key_does_not_match_and_says_why(expr, expected_error):
    predicate = compile_condition(expr)
    matched, error = predicate.evaluate(ctx(metadata={}))
    assert matched is False
    assert error == expected_error


def test_logical_operators_decide_around_a_missing_key():
    assert matches('metadata.env == "prod" || model == "gpt-4o"', metadata={})
    assert not matches('metadata.env == "prod" && model == "claude"', metadata={})


def test_a_type_mismatch_on_user_metadata_does_not_match():
    predicate = compile_condition("metadata.tier > 1")
    matched, error = predicate.evaluate(ctx(metadata={"tier": "gold"}))
    assert not matched
    assert "type mismatch" in error


def test_an_expression_giving_a_non_boolean_on_metadata_does_not_match():
    predicate = compile_condition("metadata.env")
    assert predicate.evaluate(ctx()) == (False, "the condition gave a string, not true or false")
    assert predicate.evaluate(ctx(metadata={"env": True})) == (True, None)


SYNTAX_CASES = [
    ("model ==", 9, "Syntax error at column 9: the expression ends too early"),
    ('model = "gpt-4"', 7, "compare with =="),
    ('model == "a" and cost > 1', 14, "CEL spells these &&, || and !"),
    ('model == "a" & cost > 1', 14, "CEL spells these && and ||"),
    ('"unterminated', 1, "Syntax error at column 1"),
    ("(cost > 1", 10, "Syntax error at column 10"),
    ('model == "a"\n  && && cost', 19, "line 2, column 6"),
]


@pytest.mark.parametrize(("expr", "position", "fragment"), SYNTAX_CASES)
def test_a_syntax_error_names_its_column(expr, position, fragment):
    error = error_of(expr)
    assert error.position == position
    assert error.path == ""
    assert fragment in error.message


@pytest.mark.parametrize(
    ("expr", "position", "fragment"),
    [
        ('modle == "gpt-4"', 1, "Unknown name 'modle' at column 1; did you mean 'model'?"),
        ("cost > 1 && cots > 2", 13, "Unknown name 'cots' at column 13; did you mean 'cost'?"),
        ("zzz > 1", 1, "Known names:"),
        ('model == "x" || request.body == "y"', 17, "Unknown name 'request'"),
        ('foo(model) == "x"', 1, "Unknown function 'foo' at column 1"),
        ('model.lowerAscii() == "x"', 7, "Unknown function 'lowerAscii' at column 7"),
        ('model.startswith("g")', 7, "did you mean 'startsWith'?"),
    ],
)
def test_it_refuses_unknown_names_and_functions_with_their_position(expr, position, fragment):
    error = error_of(expr)
    assert error.position == position
    assert fragment in error.message


def test_comprehension_variables_are_not_unknown_names():
    assert matches('tags.exists(t, t == "beta")')
    assert matches("tags.all(tag, size(tag) > 0)")
    assert matches('tags.filter(x, x.startsWith("b")).size() == 1')


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("model", "must be true or false; this one gives a string"),
        ("cost + 1", "gives a number"),
        ("tags", "gives a list"),
        ('cost > "a"', "type mismatch"),
        ('model + 1 == "x"', "type mismatch"),
        ("size(tags) + 1 > 2", "write double(size(tags))"),
        ("total_tokens % 2 == 0", "% needs integers"),
    ],
)
def test_it_refuses_expressions_that_can_never_be_true_or_false(expr, fragment):
    error = error_of(expr)
    assert fragment in error.message


def test_it_refuses_an_overlong_expression():
    assert "longer than" in error_of("true && " * 1000 + "true").message


def test_cel_cannot_reach_python():
    # No attribute access to Python objects, no imports, no eval: these are simply unknown names.
    for expr in ['__import__("os").system("true")', "ctx.__class__ == 1", 'eval("1") == 1']:
        with pytest.raises(ConditionError):
            compile_condition(expr)


# --- Internals worth pinning -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "rewritten"),
    [
        ("cost > 1", "cost > 1.0"),
        ("cost > 1.5", "cost > 1.5"),
        ("x == 0x10", "x == 16.0"),
        ("x == 3u", "x == 3u"),
        ("tags[0] == 1", "tags[0] == 1.0"),
        ("metadata.l[2] == [1, 2]", "metadata.l[2] == [1.0, 2.0]"),
        ("[1][0] == 1", "[1.0][0] == 1.0"),
        ('model == "gpt 4" && cost > 2', 'model == "gpt 4" && cost > 2.0'),
        ("int(x) % 2 == 0", "int(x) % 2 == 0.0"),
        ("1e3 > 1", "1e3 > 1.0"),
    ],
)
def test_integer_literals_become_doubles_outside_strings_and_indexes(source, rewritten):
    assert doubles_for_ints(source, tokenize(source)) == rewritten


def test_json_equality():
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal("1", 1)
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal([1, 2], [1])


def test_the_known_names_are_exactly_the_condition_context():
    assert set(ctx()) == VARIABLES


# --- Both forms agree --------------------------------------------------------------------------

contexts = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "llama3"]),
        "provider": st.sampled_from(["openai", "anthropic", "groq"]),
        "status": st.sampled_from(["success", "error", "rate_limited"]),
        "cost": st.one_of(st.none(), st.decimals(min_value=0, max_value=2, places=6)),
        "latency_ms": st.integers(min_value=0, max_value=60_000),
        "prompt_tokens": st.integers(min_value=0, max_value=10_000),
        "tags": st.lists(st.sampled_from(["beta", "prod", "eval"]), unique=True).map(tuple),
        "metadata": st.dictionaries(st.sampled_from(["env", "team"]), st.sampled_from(["prod", "dev"])),
        "environment": st.sampled_from(["production", "development"]),
    }
)

EQUIVALENT = [
    ({"model": "gpt-4o"}, 'model == "gpt-4o"'),
    ({"model": "gpt-4*"}, 'model.startsWith("gpt-4")'),
    ({"provider": "openai"}, 'provider == "openai"'),
    ({"status": "error"}, 'status == "error"'),
    ({"error": True}, "error == true"),
    ({"error": False}, "!error"),
    ({"cost": ">0.5"}, "cost > 0.5"),
    ({"cost": "<=0.1"}, "cost <= 0.1"),
    ({"latency_ms": ">=1000"}, "latency_ms >= 1000"),
    ({"latency_ms": "!=0"}, "latency_ms != 0"),
    ({"prompt_tokens": 500}, "prompt_tokens == 500"),
    ({"environment": "production"}, 'environment == "production"'),
    ({"tags": ["beta", "eval"]}, '"beta" in tags && "eval" in tags'),
    ({"metadata.env": "prod"}, 'has(metadata.env) && metadata.env == "prod"'),
    ({"model": "claude*", "cost": ">1", "error": True}, 'model.startsWith("claude") && cost > 1 && error'),
]


@settings(max_examples=200, deadline=None)
@given(data=contexts, pair=st.sampled_from(EQUIVALENT))
def test_object_and_cel_forms_agree(data, pair):
    obj, expr = pair
    values = ctx(**data)
    assert compile_condition(obj)(values) is compile_condition(expr)(values)


# --- Cost limits: a rule runs on every trace -----------------------------------------------------


def test_comprehensions_nest_at_most_two_deep():
    assert matches('tags.exists(a, tags.exists(b, a == "beta" && b == "checkout"))')
    error = error_of("tags.all(a, tags.all(b, tags.all(c, a != c)))")
    assert error.position == 30
    assert "nest at most 2 deep at column 30" in error.message


def test_chained_comprehensions_are_not_nested():
    assert matches('tags.map(t, t + "!").filter(t, t.startsWith("b")).exists(t, t == "beta!")')


def test_a_condition_too_slow_for_every_trace_is_refused():
    numbers = "[" + ",".join(str(i) for i in range(450)) + "]"
    error = error_of(f"{numbers}.all(a, {numbers}.all(b, a + b >= 0))")
    assert "too slow to run on every trace" in error.message


def test_deep_nesting_is_a_syntax_error_not_a_crash():
    error = error_of("(" * 500 + "true" + ")" * 500)
    assert error.message.startswith("Syntax error")


# --- The token parts (traces.usage.DETAIL_FIELDS) ------------------------------------------------

PART_COUNTS = {
    "cached_tokens": 80,
    "cache_write_tokens": 10,
    "input_audio_tokens": 5,
    "input_image_tokens": 4,
    "reasoning_tokens": 30,
    "output_audio_tokens": 3,
    "output_image_tokens": 2,
}


@pytest.mark.parametrize("name", sorted(PART_COUNTS))
def test_every_token_part_is_a_number_in_both_forms(name):
    count = PART_COUNTS[name]
    assert matches({name: f"=={count}"}, **PART_COUNTS) is True
    assert matches({name: f">{count}"}, **PART_COUNTS) is False
    assert matches(f"{name} == {count}", **PART_COUNTS) is True
    assert matches(f"{name} > {count}", **PART_COUNTS) is False
    assert matches({name: "==0"}) is True  # not reported: 0, as prompt_tokens


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("cached_tokens * 2 > prompt_tokens", True),  # 80 of 100 read from the cache
        ("cached_tokens + cache_write_tokens == 90", True),
        ("reasoning_tokens > completion_tokens / 2", True),  # 30 of 50
        ("reasoning_tokens > completion_tokens", False),
        ("input_audio_tokens + output_audio_tokens == 8 && input_image_tokens > output_image_tokens", True),
    ],
)
def test_cel_computes_with_the_token_parts(source, expected):
    assert matches(source, **PART_COUNTS) is expected


def test_a_token_part_misspelled_is_refused_with_a_hint():
    assert "did you mean 'cached_tokens'" in error_of("cache_tokens > 1").message
    assert "cached_tokens" in error_of({"cached_token": ">1"}).message
