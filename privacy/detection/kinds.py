"""The built-in PII kinds."""

from __future__ import annotations

from typing import NamedTuple

EMAIL = "EMAIL"
PHONE = "PHONE"
CREDIT_CARD = "CREDIT_CARD"
IBAN = "IBAN"
US_SSN = "US_SSN"
IP_ADDRESS = "IP_ADDRESS"
SECRET = "SECRET"

# In the order the API lists them.
BUILTIN_KINDS: tuple[str, ...] = (EMAIL, PHONE, CREDIT_CARD, IBAN, US_SSN, IP_ADDRESS, SECRET)
# Most specific first: when two findings of the same length overlap, the earlier kind wins.
TIE_ORDER: tuple[str, ...] = (SECRET, CREDIT_CARD, IBAN, US_SSN, EMAIL, IP_ADDRESS, PHONE)


class Finding(NamedTuple):
    """One detected span: ``text[start:end]`` is PII of ``kind`` (character offsets, not bytes).
    A named tuple (immutable, ordered by start, end, kind): made for every finding, it costs half
    what a frozen dataclass does."""

    start: int
    end: int
    kind: str

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "start": self.start, "end": self.end}
