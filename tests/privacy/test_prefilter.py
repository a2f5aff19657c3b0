"""The prefilter (`scanner.may_hold_pii`): a text it turns away holds nothing any recognizer could
find. Checked on every labelled value of the benchmark corpus (every split) and every example
of the recognizer tests, and against a full scan on texts built to hold none of its characters."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from privacy.detection import scan
from privacy.detection.scanner import builtin_findings, lower_case_word, may_hold_pii

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from pii_corpus import SPLITS, build  # noqa: E402

VALUES = [
    "ada@example.com",
    "+49 30 12345678",
    "4111 1111 1111 1111",
    "DE89 3704 0044 0532 0130 00",
    "123-45-6789",
    "10.0.0.12",
    "2001:db8::1",
    "sk-proj-Ab12Cd34Ef56Gh78Ij90KlMnOp",
    "AKIAABCDEFGHIJKLMNOP",  # an AWS key id without a digit
    "ghp_" + "a" * 36,
    "xoxb-abcdefghijkl",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.abcdefghijkl",
    "aws secret: " + "A" * 40,
]


@pytest.mark.parametrize("split", list(SPLITS))
def test_every_labelled_value_of_the_corpus_passes(split):
    for doc in build(split):
        for kind, start, end in doc.spans:
            assert may_hold_pii(doc.text[start:end]), (kind, doc.text[start:end])


@pytest.mark.parametrize("value", VALUES)
def test_each_kind_passes_and_is_still_found(value):
    assert may_hold_pii(value)
    assert scan(f"value: {value} end")


@pytest.mark.parametrize(
    "text",
    [
        "Please summarise the following meeting notes in three bullet points for the team.",
        "Though the night was long, she sighed and fought the thought.",  # "gh" no longer sends it through
        "これは個人情報を含まない日本語の文章です。",
        "Résumé: très bien, merci beaucoup ! ¿Qué tal?",
    ],
)
def test_text_without_candidates_is_skipped_and_a_full_scan_agrees(text, monkeypatch):
    assert not may_hold_pii(text)
    monkeypatch.setattr("privacy.detection.scanner.may_hold_pii", lambda _text: True)
    assert builtin_findings(text) == []  # the recognizers, run anyway, find nothing either


@pytest.mark.parametrize(
    "text",
    [
        "4bf92f3577b34da6a3ce929d0e0e4736",  # an OpenTelemetry trace id
        "00f067aa0ba902b7",  # a span id
        "9fceb02d0ae598e95dc970b74767f19372d61af8",  # a git hash
        "4111111111111111a",  # a Luhn-valid card number, but it runs into a letter
        "e" + "1" * 200,
        "x4155550132",  # a phone number's digits, run into a letter
        "assistant",
        "gpt4omini20240718",
        "ecretaws4111111111111111x",  # the AWS secret hint words, but no ":" or "=" before a value
        "sk" + "a1" * 30,  # an OpenAI key without its "-"
        "ghpabc" + "1" * 36,  # a GitHub token without its "_"
    ],
)
def test_a_lower_case_word_is_skipped_and_a_full_scan_agrees(text, monkeypatch):
    assert lower_case_word(text)
    assert builtin_findings(text) == []
    monkeypatch.setattr("privacy.detection.scanner.lower_case_word", lambda _text: False)
    monkeypatch.setattr("privacy.detection.scanner.may_hold_pii", lambda _text: True)
    assert builtin_findings(text) == []  # the recognizers, run anyway, find nothing either


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("4111111111111111", "CREDIT_CARD"),  # all digits: no letter, scanned
        ("4bf92f35 paid with 4111111111111111", "CREDIT_CARD"),  # words: not one word
        ("4bf92f35-ada@example.com", "EMAIL"),
        ("DE89370400440532013000", "IBAN"),  # upper case
        ("AKIAIOSFODNN7EXAMPLE", "SECRET"),
        ("４１１１１１１１１１１１１１１１x", None),  # full-width digits: not ASCII, so scanned (and no card)
    ],
)
def test_text_that_is_not_one_lower_case_word_is_scanned(text, kind):
    assert not lower_case_word(text)
    assert [f.kind for f in scan(text)] == ([kind] if kind else [])


def test_random_lower_case_words_hold_nothing_the_recognizers_find(monkeypatch):
    """Words of lower-case letters and long digit runs (card numbers, phone numbers, IBAN digits
    between letters): skipped, and the recognizers, run anyway, agree on every one."""
    rng = random.Random(12)
    pieces = [
        "4111111111111111",
        "4155550132",
        "4930123456",
        "123456789",
        "192168001001",
        "sk",
        "ghp",
        "aws",
        "secret",
        "eyj",
        "akia",
    ]
    words = []
    for _ in range(2000):
        parts = [
            rng.choice(pieces)
            if rng.random() < 0.5
            else "".join(rng.choice("abcdefxyz0123456789") for _ in range(rng.randint(1, 12)))
            for _ in range(rng.randint(1, 5))
        ]
        word = "".join(parts)
        if lower_case_word(word):
            words.append(word)
    assert len(words) > 1500
    monkeypatch.setattr("privacy.detection.scanner.lower_case_word", lambda _text: False)
    monkeypatch.setattr("privacy.detection.scanner.may_hold_pii", lambda _text: True)
    assert [w for w in words if builtin_findings(w)] == []
