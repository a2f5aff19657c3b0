"""The one money formatter: small amounts keep their significant digits, a dollar and more is shown
to the cent, and an unknown cost is said in words, never as 0."""

from __future__ import annotations

from decimal import Decimal

import pytest

from config.jsoncodec import shown
from config.money import cost_text, usd


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "$0"),
        (Decimal("0E-10"), "$0"),
        (Decimal("0.0000035000"), "$0.0000035"),  # not "$0." or "$0.0000"
        (3.5e-06, "$0.0000035"),
        (Decimal("0.0000001"), "$0.0000001"),
        (Decimal("0.0000000001"), "$0.0000000001"),
        (Decimal("0.00001234567"), "$0.00001235"),  # four significant digits
        (Decimal("0.0153"), "$0.0153"),
        (0.5, "$0.50"),
        (0.05, "$0.05"),
        (Decimal("0.99996"), "$1.00"),
        (1, "$1.00"),
        (Decimal("1.005"), "$1.01"),
        (2.25, "$2.25"),
        (Decimal("1234567.891"), "$1,234,567.89"),
        (Decimal("99999999.9999999999"), "$100,000,000.00"),
        (-0.25, "-$0.25"),
        (None, "—"),
    ],
)
def test_usd(value, text):
    assert usd(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("0.0000612345"), "$0.0000612345"),
        (Decimal("1.2345678900"), "$1.23456789"),
        (Decimal("1234.5"), "$1,234.50"),
        (Decimal("0.5000000000"), "$0.50"),
    ],
)
def test_usd_exact_keeps_every_stored_digit(value, text):
    assert usd(value, exact=True) == text


@pytest.mark.parametrize(
    ("cost", "count", "unpriced", "text"),
    [
        (Decimal("1.2"), 5, 0, "$1.20"),
        (0, 0, 0, "$0"),
        (0, 3, 3, "3 unpriced"),  # not "$0"
        (None, 1, 1, "1 unpriced"),
        (Decimal("1.2"), 5, 2, "$1.20 (2 of 5 unpriced)"),
        (0.0000035, 1500, 1000, "$0.0000035 (1,000 of 1,500 unpriced)"),
    ],
)
def test_cost_text(cost, count, unpriced, text):
    assert cost_text(cost, count=count, unpriced=unpriced) == text


def test_cost_text_breaks_a_line_where_asked():
    assert cost_text(1, count=2, unpriced=1, sep="\n") == "$1.00\n(1 of 2 unpriced)"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("pro", "pro"),
        ("", ""),
        (2, "2"),
        (2.5, "2.5"),
        (True, "true"),
        (None, "null"),
        ({"name": "tracerelay", "version": "1.0"}, '{"name": "tracerelay", "version": "1.0"}'),
        (["a", 1], '["a", 1]'),
        ({"ü": "日本"}, '{"ü": "日本"}'),
    ],
)
def test_a_metadata_value_is_shown_as_json_never_as_python(value, text):
    assert shown(value) == text
