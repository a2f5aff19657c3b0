"""The dashboard's condition builder: rows → the object form ("all") or CEL ("any") that the one
compiler accepts and that match what the rows say; object conditions back to rows."""

from __future__ import annotations

import pytest

from routing.builder import BuilderError, Row, condition_to_rows, rows_to_condition
from routing.conditions import compile_condition
from traces.records import TraceRecord


def _ctx(**fields):
    return {**TraceRecord(trace_id="t1", team_id=1, model="gpt-4o").condition_context(), **fields}


ROWS = [
    Row("model", "prefix", "gpt-4"),
    Row("cost", "gt", "0.05"),
    Row("cost", "lt", "1"),
    Row("metadata", "equals", "prod", "env"),
    Row("error", "false"),
    Row("tags", "all", "a, b"),
    Row("provider", "in", "OpenAI, azure*"),
]


def test_all_is_the_object_form():
    condition = rows_to_condition(ROWS, "all")
    assert condition == {
        "model": "gpt-4*",
        "cost": [">0.05", "<1"],
        "metadata.env": "prod",
        "error": False,
        "tags": ["a", "b"],
        "provider": ["OpenAI", "azure*"],
    }
    predicate = compile_condition(condition)
    hit = _ctx(cost=0.5, metadata={"env": "prod"}, tags=["a", "b", "c"], provider="openai")
    assert predicate(hit)
    assert not predicate({**hit, "cost": 2.0})
    assert not predicate({**hit, "cost": None})  # unpriced: a cost comparison never matches


def test_any_is_cel_joined_by_or_and_means_the_same_per_row():
    source = rows_to_condition(ROWS, "any")
    assert source == (
        'model.startsWith("gpt-4") || cost > 0.05 || cost < 1 || metadata.env == "prod" || !error'
        ' || ("a" in tags && "b" in tags) || (provider in ["openai"] || provider.startsWith("azure"))'
    )
    predicate = compile_condition(source)
    miss = _ctx(model="claude-3", cost=None, error=True, provider="anthropic")
    assert not predicate(miss)
    for row in ROWS:  # each row alone, as CEL, agrees with the same row as the object form
        cel, obj = (
            compile_condition(rows_to_condition([row], "any")),
            compile_condition(rows_to_condition([row], "all")),
        )
        for ctx in (miss, _ctx(cost=0.5, metadata={"env": "prod"}, tags=["a", "b"], provider="azure-eu")):
            assert cel(ctx) == obj(ctx), row


def test_metadata_keys_and_values():
    assert rows_to_condition([Row("metadata", "equals", "2", "tier")], "all") == {"metadata.tier": 2}
    assert rows_to_condition([Row("metadata", "equals", '"2"', "tier")], "all") == {"metadata.tier": "2"}
    assert (
        rows_to_condition([Row("metadata", "equals", "true", "my-key.in")], "any") == 'metadata["my-key"]["in"] == true'
    )


def test_blank_rows_mean_every_trace():
    assert rows_to_condition([Row(), Row()], "all") is None


@pytest.mark.parametrize(
    "row,message",
    [
        (Row("model", "gt", "x"), "does not apply to model"),
        (Row("cost", "gt", "lots"), "'lots' is not a number"),
        (Row("modle", "eq", "x"), "Unknown field"),
        (Row("metadata", "equals", "x", ""), "Name the metadata key"),
        (Row("model", "eq", " "), "Give a value"),
    ],
)
def test_bad_rows_carry_their_message(row, message):
    with pytest.raises(BuilderError):
        rows_to_condition([row], "all")
    assert any(message in e for e in row.errors)


def test_a_text_field_twice_under_all_is_refused():
    rows = [Row("model", "eq", "a"), Row("model", "eq", "b")]
    with pytest.raises(BuilderError):
        rows_to_condition(rows, "all")
    assert "already in another row" in rows[1].errors[0]


def test_object_conditions_round_trip_through_rows():
    condition = rows_to_condition(ROWS, "all")
    assert isinstance(condition, dict)
    rows = condition_to_rows(condition)
    assert rows is not None and rows_to_condition(rows, "all") == condition
    assert condition_to_rows({"metadata.user": {"plan": "pro"}}) == [
        Row("metadata", "equals", '{"plan": "pro"}', "user")
    ]
    # The metadata object reads as one row per key (the same test, in the builder's spelling).
    assert condition_to_rows({"metadata": {"env": "prod", "tier": 2}}) == [
        Row("metadata", "equals", "prod", "env"),
        Row("metadata", "equals", "2", "tier"),
    ]
    assert condition_to_rows({"model": ["a,b", "c"]}) is None  # the builder cannot show it: JSON instead
