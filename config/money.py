"""Money as people read it: the one formatter of every page, report, alert and e-mail.

An LLM call often costs a fraction of a cent, so an amount under a dollar keeps its significant
digits (`$0.0000035`, `$0.0153`, `$0.50`) instead of rounding to a silent `$0.00`; a dollar and
more is shown to the cent (`$1,234.57`). A cost nobody knows is never a number: `cost_text` says
"unpriced" where no trace of a sum has a price, and "n of m unpriced" beside a partial sum.
(Files meant for programs, the report's CSV and the API, keep exact decimal numbers instead.)
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

SIGNIFICANT = 4  # digits kept of an amount under a dollar
CENT = Decimal("0.01")

Amount = Decimal | float | int


def usd(value: Amount | None, *, exact: bool = False) -> str:
    """``$0.0000035``, ``$0.0153``, ``$0.50``, ``$1,234.57``; ``exact`` keeps every stored digit
    (one trace's cost: ``$1.2345678``). None (no amount at all) is a dash."""
    if value is None:
        return "—"
    amount = value if isinstance(value, Decimal) else Decimal(str(value))
    if amount == 0:
        return "$0"
    sign, amount = ("-" if amount < 0 else ""), abs(amount)
    if exact:
        shown = amount.normalize()
    elif amount >= 1:
        shown = amount.quantize(CENT, ROUND_HALF_UP)
    else:
        # 4 significant digits: 0.00000353 → 0.000003530 → 0.00000353
        step = Decimal(1).scaleb(amount.adjusted() - SIGNIFICANT + 1)
        shown = amount.quantize(step, ROUND_HALF_UP).normalize()
    whole, _, fraction = format(shown, ",f").partition(".")
    return f"{sign}${whole}.{fraction.rstrip('0').ljust(2, '0')}"


def cost_text(cost: Amount | None, *, count: int, unpriced: int, sep: str = " ") -> str:
    """A sum of the costs of ``count`` traces, ``unpriced`` of which have no known price: the sum when
    every trace is priced, "3 unpriced" when none is, "$1.20 (2 of 5 unpriced)" beside a partial sum
    (``sep`` between the two: a narrow table cell takes a line break)."""
    if unpriced <= 0:
        return usd(cost or 0)
    if unpriced >= count:
        return f"{unpriced:,} unpriced"
    return f"{usd(cost or 0)}{sep}({unpriced:,} of {count:,} unpriced)"
