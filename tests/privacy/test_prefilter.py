"""The prefilter (`scanner.may_hold_pii`): a text it turns away holds nothing any recognizer could
find. Checked on every labelled value of the benchmark corpus (all three splits) and every example
of the recognizer tests, and against a full scan on texts built to hold none of its characters."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from privacy.detection import scan
from privacy.detection.patterns import HEX_ID
from privacy.detection.scanner import builtin_findings, may_hold_pii

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from pii_corpus import build  # noqa: E402

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


@pytest.mark.parametrize("split", ["dev", "heldout", "fresh"])
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
    ],
)
def test_a_lower_case_hex_id_is_skipped_and_a_full_scan_agrees(text, monkeypatch):
    assert may_hold_pii(text) and HEX_ID.fullmatch(text)
    assert builtin_findings(text) == []
    monkeypatch.setattr("privacy.detection.patterns.HEX_ID", re.compile(r"(?!)"))  # matches nothing
    assert builtin_findings(text) == []  # the recognizers, run anyway, find nothing either


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("4111111111111111", "CREDIT_CARD"),  # all digits: not a hex id (no letter), scanned
        ("4bf92f35 paid with 4111111111111111", "CREDIT_CARD"),  # words: not one id
        ("4bf92f35-ada@example.com", "EMAIL"),
        ("DE89370400440532013000", "IBAN"),  # upper case
    ],
)
def test_text_that_is_not_one_lower_case_hex_id_is_scanned(text, kind):
    assert not HEX_ID.fullmatch(text)
    assert [f.kind for f in scan(text)] == [kind]
