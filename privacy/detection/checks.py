"""Validators that turn a candidate span into a finding or reject it: checksums, ranges, formats.

Each one is the reason a look-alike (an order number, a version string, a timestamp) is not reported.
"""

from __future__ import annotations

import ipaddress
import re

import phonenumbers

# ---------------------------------------------------------------------------------------------
# Credit cards: length, issuer prefix (IIN) and the Luhn check digit.

_ISSUER_PREFIX = re.compile(
    r"4"  # Visa
    r"|5[1-5]|2(?:2[2-9][1-9]|2[3-9]\d|[3-6]\d\d|7[01]\d|720)"  # Mastercard
    r"|3[47]"  # American Express
    r"|6(?:011|5|4[4-9])"  # Discover
    r"|3(?:0[0-5]|[68])"  # Diners Club
    r"|35(?:2[89]|[3-8]\d)"  # JCB
    r"|62"  # UnionPay
)


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def is_card_number(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and _ISSUER_PREFIX.match(digits) is not None and luhn_valid(digits)


# ---------------------------------------------------------------------------------------------
# IBAN: the country's length and the ISO 7064 mod-97 check.

IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
    "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
    "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
    "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
    "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
    "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29,
    "RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip


def iban_valid(compact: str) -> bool:
    """``compact`` is upper case without spaces."""
    if IBAN_LENGTHS.get(compact[:2]) != len(compact):
        return False
    rearranged = compact[4:] + compact[:4]
    try:
        return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------------
# US Social Security numbers: areas 000, 666 and 900-999, group 00 and serial 0000 are never issued.


def ssn_valid(area: str, group: str, serial: str) -> bool:
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


# ---------------------------------------------------------------------------------------------
# IP addresses


def ipv4_valid(candidate: str) -> bool:
    """Four dotted numbers 0-255. Leading zeros ("01.02.03.04") read as dates or versions, and
    `ipaddress` refuses them too; checked by hand because `IPv4Address` costs ten times more."""
    parts = candidate.split(".")
    return len(parts) == 4 and all(
        p.isdigit() and len(p) <= 3 and int(p) <= 255 and (len(p) == 1 or p[0] != "0") for p in parts
    )


def ipv6_valid(candidate: str) -> bool:
    # "a::b", "std::" or "12:30:45" are code and clocks, not addresses: ask for real structure.
    groups = [g for g in candidate.split(":") if g]
    if len(groups) < 3 or not any(ch.isdigit() for ch in candidate):
        return False
    try:
        ipaddress.IPv6Address(candidate)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Phone numbers: parsed and validated by libphonenumber's metadata.

# Regions a number written without its country code is tried against, in order: those whose
# national numbers start with a trunk "0" ...
NATIONAL_REGIONS: tuple[str, ...] = (
    "GB", "DE", "FR", "NL", "CH", "AT", "BE", "SE", "JP", "CN", "IN", "AU", "IT", "BR",
)  # fmt: skip
# ... and those whose numbers are written without one (tried only on three or more digit groups).
UNPREFIXED_REGIONS: tuple[str, ...] = ("ES", "IT", "PL", "PT", "MX", "BR", "CN")

DATE_LIKE = re.compile(
    r"(?:19|20)\d\d[-./](?:0?[1-9]|1[0-2])[-./](?:0?[1-9]|[12]\d|3[01])|\d\d?[-./]\d\d?[-./](?:19|20)\d\d"
)
_NANP_SHAPE = re.compile(r"(?:\+?1[ .\-]?)?\(?[2-9]\d\d\)?[ .\-]?[2-9]\d\d[ .\-]\d{4}")
_GROUPED = re.compile(r"\(?\d{2,4}\)?(?:[ \-]\d{2,5}){2,4}")
_NOT_DIGIT = re.compile(r"\D")


def phone_valid(candidate: str) -> bool:
    """An international number (``+`` or ``00``), or a national one written the way people do
    (a trunk 0, a North American shape, or three or more groups) that libphonenumber's metadata
    calls valid in one of the regions above. Bare runs of digits without any grouping are never
    phones: they are ids, timestamps and amounts."""
    digits = _NOT_DIGIT.sub("", candidate)
    if not 7 <= len(digits) <= 15 or DATE_LIKE.match(candidate):
        return False
    if candidate.startswith("+") or candidate.startswith("00"):
        return _international(digits[2:] if candidate.startswith("00") else digits)
    if len(digits) == len(candidate):
        return False
    if _NANP_SHAPE.fullmatch(candidate):
        return _valid(1, digits[1:] if len(digits) == 11 else digits)
    if digits[0] == "0":
        return any(_valid_national(region, digits) for region in NATIONAL_REGIONS)
    if 9 <= len(digits) <= 11 and _GROUPED.fullmatch(candidate):
        return any(_valid_national(region, digits) for region in UNPREFIXED_REGIONS)
    return False


def _international(digits: str) -> bool:
    # The country code is the first 1-3 digits that name one (no code is a prefix of another).
    for n in (1, 2, 3):
        code = int(digits[:n])
        if code in phonenumbers.COUNTRY_CODE_TO_REGION_CODE:
            national = digits[n:]
            # "+44 (0)20 7946 0958": the trunk 0 written after the country code.
            return _valid(code, national) or (national[:1] == "0" and _valid(code, national[1:]))
    return False


def _valid_national(region: str, digits: str) -> bool:
    metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
    if metadata is None or metadata.country_code is None:
        return False
    prefix = metadata.national_prefix or ""
    if prefix and digits.startswith(prefix) and _valid(metadata.country_code, digits[len(prefix) :], region):
        return True
    return _valid(metadata.country_code, digits, region)


def _valid(code: int, national: str, region: str | None = None) -> bool:
    """Built directly rather than through `phonenumbers.parse`, which costs several times more."""
    if not national or len(national) > 17:
        return False
    number = phonenumbers.PhoneNumber(country_code=code, national_number=int(national))
    if national[0] == "0":  # Italian numbers keep their leading zero
        number.italian_leading_zero = True
        number.number_of_leading_zeros = len(national) - len(national.lstrip("0"))
    if region is not None:
        return phonenumbers.is_valid_number_for_region(number, region)
    if code == 1:  # 25 regions share +1; trying the two big ones first skips most of them
        return any(phonenumbers.is_valid_number_for_region(number, r) for r in ("US", "CA")) or (
            phonenumbers.is_valid_number(number)
        )
    return phonenumbers.is_valid_number(number)
