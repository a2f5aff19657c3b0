"""Counts are written with thousands separators on every page (`{{ n|num }}`)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from accounts.templatetags.dashboard import num


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0, "0"), (999, "999"), (1200, "1,200"), (1234567, "1,234,567"), (-4500, "-4,500"), (Decimal("12000"), "12,000")],
)
def test_counts_have_thousands_separators(value, shown):
    assert num(value) == shown


def test_what_is_not_a_count():
    assert num(None) == "—" and num(None, "–") == "–" and num("") == "—"
    assert num(1234.5) == "1,234.50"
    assert num("n/a") == "n/a"
