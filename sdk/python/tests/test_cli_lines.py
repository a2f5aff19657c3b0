"""`tracerelay traces tail` prints a cost with every digit the API gives (a small one is not rounded
to $0.000000) and says "unpriced" for a trace without a known price."""

from __future__ import annotations

import pytest
from tracerelay.cli._team import _trace_line


@pytest.mark.parametrize(
    ("cost", "shown"),
    [(3.5e-07, "$0.00000035"), (0.0123, "$0.0123"), ("0.0000001000", "$0.0000001"), (20, "$20"), (None, "unpriced")],
)
def test_a_trace_line_shows_its_cost(cost, shown):
    line = _trace_line({"timestamp": "2026-11-27T12:00:00Z", "model": "m", "cost": cost, "id": "trc_1"})
    assert f"  {shown}  " in line
