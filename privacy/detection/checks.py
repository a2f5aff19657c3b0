"""Validators that turn a candidate span into a finding or reject it: checksums, ranges, formats.

Each one is the reason a look-alike (an order number, a version string, a timestamp) is not reported.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from typing import Any

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
# North American layouts: area code [2-9]XX (in parentheses or followed by a separator), any
# exchange (Canadian and test numbers use 0 and 1 there too), the line after a separator.
_NANP_SHAPE = re.compile(r"(?:\+?1[ .\-]?)?(?:\([2-9]\d\d\)[ .\-]?|[2-9]\d\d[ .\-])\d{3}[ .\-]\d{4}")
# An area code in parentheses, after a country or trunk prefix or not: "8 (928) 775-74-47",
# "(351) 925 807 302", "(0711) 123456".
_PARENTHESIZED = re.compile(r"(?:\d{1,3}[ .\-]?)?\(\d{2,5}\)[ .\-]?\d[\d .\-]*\d")
_GROUPED = re.compile(r"\(?\d{2,4}\)?(?:[ \-]\d{2,5}){2,4}")
_TWO_GROUPS = re.compile(r"\(?\d{2,5}\)? \d{5,8}")  # 8-12 digits (a shorter first group, a longer second)
_NANP_BARE = re.compile(r"1?[2-9]\d{9}")
# A national number's first group is its area code, two to five digits with the trunk 0.
_AREA_CODE_FIRST = re.compile(r"\(0\d{1,4}\) ?\d|0\d{1,4}[ .\-]\d")
# A group of one digit first or last: "0-306-40615-2" is an ISBN, not a phone number.
_ONE_DIGIT_END = re.compile(r"^\(?\d[ .\-]|[ .\-]\d$")
# Words that call the bare number after them a phone number (lower case; "tel" covers telephone,
# Telefon, teléfono, telefono, telefoon...).
PHONE_WORDS: tuple[str, ...] = (
    "phone", "tel", "mobil", "móvil", "movil", "cell", "fax", "sms", "whatsapp", "call", "contact",
    "portable", "celular", "handy", "kontakt", "tlf", "numéro", "número", "numero", "nummer", "numer", "電話", "电话",
    "手机", "携帯", "번호",
)  # fmt: skip
_NOT_DIGIT = re.compile(r"\D")


def phone_valid(candidate: str) -> bool:
    """A phone number written the way people write one (`phone_digits_valid`). Bare runs of digits
    without any grouping are never phones on their own: they are ids, timestamps and amounts (the
    scanner accepts some after a word that calls them a phone number: `phone_context`)."""
    digits = _NOT_DIGIT.sub("", candidate)
    if not 7 <= len(digits) <= 15 or DATE_LIKE.match(candidate):
        return False
    return phone_digits_valid(candidate, digits)


def phone_digits_valid(candidate: str, digits: str) -> bool:
    """`phone_valid` for a candidate the caller has already stripped to its ``digits`` (7 to 15 of
    them) and found not to be a date (`scanner.classify_number`).

    A redactor errs toward redacting what is shaped like a phone number, so the layout decides and
    libphonenumber's metadata (which lags behind the ranges countries allocate and leaves out
    unassigned and fictional ones) is asked only where the layout alone would take ids and amounts:

    - international (``+`` or ``00``): a country code and a national number of a length possible
      there; ``00`` needs a separator too (``0012345678`` is an id);
    - North American layouts (``(545) 741-4436``, ``545.741.4436``, ``1-858-073-0215``): the shape
      alone (an area code ``[2-9]XX``);
    - an area code in parentheses and 8-13 digits (``8 (928) 775-74-47``, ``(351) 925 807 302``);
    - a trunk ``0`` (``01632 960123``, ``(0711) 123456``): valid in a region of `NATIONAL_REGIONS`,
      or 10-11 digits whose first group is an area code (two to five digits);
    - three or more groups without a trunk ``0`` (Spain, Italy, Poland...): valid in a region of
      `UNPREFIXED_REGIONS` (the same shape is a large amount written with spaces).

    A national number never starts or ends with a group of one digit: ``0-306-40615-2`` is an ISBN."""
    if candidate.startswith("+") or candidate.startswith("(+"):
        return _international(digits, possible=True)
    if candidate.startswith("00"):
        return _international(digits[2:], possible=len(digits) != len(candidate))
    if len(digits) == len(candidate):
        return False
    if _NANP_SHAPE.fullmatch(candidate):
        return True
    if "(" in candidate and 8 <= len(digits) <= 13 and _PARENTHESIZED.fullmatch(candidate):
        return True
    if _ONE_DIGIT_END.search(candidate):
        return False
    if digits[0] == "0":
        if any(_valid_national(region, digits) for region in NATIONAL_REGIONS):
            return True
        return 10 <= len(digits) <= 11 and digits[1] != "0" and _AREA_CODE_FIRST.match(candidate) is not None
    if 9 <= len(digits) <= 11 and _GROUPED.fullmatch(candidate):
        return any(_valid_national(region, digits) for region in UNPREFIXED_REGIONS)
    return False


def phone_context(before: str) -> bool:
    """Whether the text just before a bare run of digits calls it a phone number ("phone:",
    "Telefonnummer", "电话"...): then ``5457414436`` is one, not an id (`scanner`)."""
    lowered = before.lower()
    return any(word in lowered for word in PHONE_WORDS)


def context_phone(candidate: str) -> bool:
    """A number `phone_digits_valid` refused that is a phone number when the words before it say
    so (`phone_context`): a bare North American number (``5457414436``, ``15457414436``), a bare
    national one with its trunk ``0`` (``07700900123``) or valid without one in a region of
    `UNPREFIXED_REGIONS` (``13340562241`` in China, ``3465807301`` in Italy), an international one
    of 11-12 digits written without its ``+`` (``447700900123``), or 8-12 digits in two groups split by a space
    (``545 7414436``, ``333 1234567``). Not three or more groups or dashes: after "phone" in a table
    header, those are SSNs (``123-45-6789``), ZIP+4 codes and ISBNs."""
    if candidate.isdigit():
        length = len(candidate)
        if not 9 <= length <= 12:  # 13 digits are an EAN barcode before they are a phone number
            return False
        if length <= 11:
            if _NANP_BARE.fullmatch(candidate) is not None:
                return True
            if candidate[0] == "0" and candidate[1] != "0" and length >= 10:
                return True
            # Ten digits starting with 1 are a Unix time (2001-2033) before they are a Mexican number.
            if (length != 10 or candidate[0] != "1") and any(
                _valid_national(region, candidate) for region in UNPREFIXED_REGIONS
            ):
                return True
        return length >= 11 and candidate[0] != "0" and _international(candidate, possible=True)
    return candidate.count(" ") == 1 and _TWO_GROUPS.fullmatch(candidate) is not None


def _international(digits: str, *, possible: bool) -> bool:
    """A valid number after its country code (the first 1-3 digits that name one: no code is a
    prefix of another), or with ``possible`` one of a length possible for that country."""
    for n in (1, 2, 3):
        code = int(digits[:n])
        if code in phonenumbers.COUNTRY_CODE_TO_REGION_CODE:
            national = digits[n:]
            # "+44 (0)20 7946 0958": the trunk 0 written after the country code.
            if national[:1] == "0" and len(national) > 1:
                trunkless = national[1:]
                if _valid(code, national) or _valid(code, trunkless):
                    return True
                national = trunkless
            elif _valid(code, national):
                return True
            return possible and national[:1] != "0" and len(national) in _possible_lengths(code)
    return False


@functools.cache
def _possible_lengths(code: int) -> frozenset[int]:
    """The national number lengths libphonenumber calls possible for any region of ``code``."""
    lengths: set[int] = set()
    for region in phonenumbers.COUNTRY_CODE_TO_REGION_CODE.get(code, ()):
        metadata = phonenumbers.PhoneMetadata.metadata_for_region_or_calling_code(code, region.upper())
        if metadata is not None and metadata.general_desc is not None:
            lengths.update(metadata.general_desc.possible_length or ())
    return frozenset(lengths)


def _valid_national(region: str, digits: str) -> bool:
    metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
    if metadata is None or metadata.country_code is None:
        return False
    prefix = metadata.national_prefix or ""
    if prefix and digits.startswith(prefix) and _valid(metadata.country_code, digits[len(prefix) :], region):
        return True
    return _valid(metadata.country_code, digits, region)


def _valid(code: int, national: str, region: str | None = None) -> bool:
    """libphonenumber's ``is_valid_number`` (or ``..._for_region``), built directly rather than
    through `phonenumbers.parse` (which costs several times more), with the type patterns of a
    region compiled once per number length (`_type_pattern`): the same answer in a third of the time
    (tests/privacy/test_phone_validity.py checks it against phonenumbers on every region)."""
    if not national or len(national) > 17:
        return False
    # The national significant number as phonenumbers spells it (Italian numbers keep their zeros).
    nsn = "0" * (len(national) - len(national.lstrip("0"))) + str(int(national)) if national[0] == "0" else national
    if region is not None:
        return _valid_for_region(code, nsn, region)
    if code == 1:  # 25 regions share +1; trying the two big ones first skips most of them
        return _valid_for_region(1, nsn, "US") or _valid_for_region(1, nsn, "CA") or _valid_any(1, nsn)
    return _valid_any(code, nsn)


def _valid_any(code: int, nsn: str) -> bool:
    """``is_valid_number``: the region the number belongs to (`region_code_for_number`), then valid there."""
    regions = phonenumbers.COUNTRY_CODE_TO_REGION_CODE.get(code)
    if not regions:
        return False
    if len(regions) == 1:
        return _valid_for_region(code, nsn, regions[0])
    for region in regions:
        metadata = phonenumbers.PhoneMetadata.metadata_for_region(region.upper(), None)
        if metadata is None:
            continue
        if metadata.leading_digits is not None:
            if _leading_digits(metadata.leading_digits).match(nsn):
                return _valid_for_region(code, nsn, region)
        elif _type_matches(nsn, metadata):
            return _valid_for_region(code, nsn, region)
    return False


def _valid_for_region(code: int, nsn: str, region: str) -> bool:
    """``is_valid_number_for_region``: the metadata look-ups and the type pattern for numbers of this
    length are done once per (code, region, length), then it is one regex match."""
    key = (code, region, len(nsn))
    pattern = _REGION_PATTERNS.get(key, _UNSET)
    if pattern is _UNSET:
        pattern = _REGION_PATTERNS[key] = _region_pattern(code, region, len(nsn))
    return pattern is not None and pattern.fullmatch(nsn) is not None


def _region_pattern(code: int, region: str, length: int) -> re.Pattern[str] | None:
    metadata = phonenumbers.PhoneMetadata.metadata_for_region_or_calling_code(code, region.upper())
    if metadata is None:
        return None
    if region != phonenumbers.REGION_CODE_FOR_NON_GEO_ENTITY:
        if code != phonenumbers.country_code_for_valid_region(region):
            return None
    return _type_pattern(metadata, length)


# The number types `_number_type_helper` tries after the general description, in its order; mobile
# last and only when its pattern differs from fixed line's.
_TYPES = ("premium_rate", "toll_free", "shared_cost", "voip", "personal_number", "pager", "uan", "voicemail")
_TYPE_PATTERNS: dict[tuple[str | None, int | None, int], re.Pattern[str] | None] = {}
_REGION_PATTERNS: dict[tuple[int, str, int], re.Pattern[str] | None] = {}
_UNSET: Any = object()


@functools.cache
def _leading_digits(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _desc_applies(desc: Any, length: int) -> bool:
    """`_is_number_matching_desc`'s length test: a description with possible lengths must list it."""
    if desc is None or not desc.national_number_pattern:
        return False
    return not desc.possible_length or length in desc.possible_length


def _type_pattern(metadata: Any, length: int) -> re.Pattern[str] | None:
    """The general description's pattern AND any type's pattern, for numbers of ``length``, as one
    regex (None: no description applies, the number is of no type)."""
    key = (metadata.id, metadata.country_code, length)
    if key in _TYPE_PATTERNS:
        return _TYPE_PATTERNS[key]
    pattern = None
    if _desc_applies(metadata.general_desc, length):
        descs = [getattr(metadata, name) for name in _TYPES] + [metadata.fixed_line]
        if not metadata.same_mobile_and_fixed_line_pattern:
            descs.append(metadata.mobile)
        types = [d.national_number_pattern for d in descs if _desc_applies(d, length)]
        if types:
            general = metadata.general_desc.national_number_pattern
            any_type = "|".join(f"(?:{t})" for t in types)
            pattern = re.compile(f"(?=(?:{general})$)(?:{any_type})")
    _TYPE_PATTERNS[key] = pattern
    return pattern


def _type_matches(nsn: str, metadata: Any) -> bool:
    """``_number_type_helper(nsn, metadata) != UNKNOWN``."""
    pattern = _type_pattern(metadata, len(nsn))
    return pattern is not None and pattern.fullmatch(nsn) is not None
