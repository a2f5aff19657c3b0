"""PII detection: built-in recognizers plus a team's custom patterns. See docs/privacy.md."""

from .custom import CustomPattern, PatternError, compile_patterns
from .kinds import BUILTIN_KINDS, CREDIT_CARD, EMAIL, IBAN, IP_ADDRESS, PHONE, SECRET, US_SSN, Finding
from .scanner import may_hold_pii, scan

__all__ = [
    "BUILTIN_KINDS",
    "CREDIT_CARD",
    "EMAIL",
    "IBAN",
    "IP_ADDRESS",
    "PHONE",
    "SECRET",
    "US_SSN",
    "CustomPattern",
    "Finding",
    "PatternError",
    "compile_patterns",
    "may_hold_pii",
    "scan",
]
