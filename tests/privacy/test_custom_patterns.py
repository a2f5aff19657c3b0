"""Custom patterns: compiled with RE2, validated, and merged with the built-in findings."""

from __future__ import annotations

import pytest

from privacy.detection import PatternError, compile_patterns, scan


def test_a_pattern_finds_its_spans_with_character_offsets():
    (pattern,) = compile_patterns([{"name": "TICKET", "regex": r"TCK-[0-9]{4}"}])
    text = "é TCK-1234 and TCK-9876"
    assert [(f.kind, text[f.start : f.end]) for f in scan(text, custom=[pattern])] == [
        ("TICKET", "TCK-1234"),
        ("TICKET", "TCK-9876"),
    ]


def test_the_longer_of_overlapping_findings_wins_whichever_kind():
    custom = compile_patterns([{"name": "CUSTOMER_MAIL", "regex": r"customer: \S+@\S+"}])
    text = "customer: jane@example.com"
    assert [(f.kind, f.start, f.end) for f in scan(text, custom=custom)] == [("CUSTOMER_MAIL", 0, 26)]


def test_at_equal_length_a_built_in_kind_wins():
    custom = compile_patterns([{"name": "MAILISH", "regex": r"[a-z]+@example\.com"}])
    text = "jane@example.com"
    assert [f.kind for f in scan(text, custom=custom)] == ["EMAIL"]


def test_overlap_resolution_does_not_depend_on_pattern_order():
    a = {"name": "A", "regex": r"\d{3}-\d{3}"}
    b = {"name": "B", "regex": r"\d{3}-\d{3}-\d{2}"}
    text = "id 123-456-78"
    one = scan(text, custom=compile_patterns([a, b]))
    two = scan(text, custom=compile_patterns([b, a]))
    assert one == two
    assert [f.kind for f in one] == ["B"]


def test_a_catastrophic_pattern_runs_in_linear_time():
    (pattern,) = compile_patterns([{"name": "EVIL", "regex": r"(a+)+$"}])
    # A backtracking engine would not finish this in the lifetime of the test run.
    assert list(pattern.finditer("a" * 100_000 + "!")) == []


@pytest.mark.parametrize(
    ("item", "field", "words"),
    [
        ({"name": "X", "regex": r"(\w)\1"}, "custom_patterns[0].regex", "backreferences"),
        ({"name": "X", "regex": r"(?<=a)b"}, "custom_patterns[0].regex", "lookaround"),
        ({"name": "X", "regex": "["}, "custom_patterns[0].regex", "invalid regex"),
        ({"name": "X", "regex": ""}, "custom_patterns[0].regex", "empty"),
        ({"name": "X", "regex": "a?"}, "custom_patterns[0].regex", "matches the empty string"),
        ({"name": "x", "regex": "a"}, "custom_patterns[0].name", "upper-case"),
        ({"name": "PHONE", "regex": "a"}, "custom_patterns[0].name", "built-in"),
        ({"name": "X", "regex": "(" * 30 + "a{1000}){1000}" + ")" * 29}, "custom_patterns[0].regex", "Pattern 'X'"),
    ],
)
def test_bad_patterns_are_refused_naming_where(item, field, words):
    with pytest.raises(PatternError) as caught:
        compile_patterns([item])
    assert caught.value.field == field
    assert words in caught.value.message


def test_names_must_be_unique():
    with pytest.raises(PatternError) as caught:
        compile_patterns([{"name": "A", "regex": "a"}, {"name": "A", "regex": "b"}])
    assert caught.value.field == "custom_patterns[1].name"
