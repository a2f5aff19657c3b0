"""`checks._valid` (phone validity with each region's type patterns compiled once) gives exactly
libphonenumber's answer: compared with `phonenumbers.is_valid_number` / `..._for_region` on numbers
of every length for every country calling code, and on the national regions the scanner tries."""

from __future__ import annotations

import random

import phonenumbers
import pytest

from privacy.detection import checks


def reference(code: int, national: str, region: str | None = None) -> bool:
    """The previous implementation, through phonenumbers' own API."""
    if not national or len(national) > 17:
        return False
    number = phonenumbers.PhoneNumber(country_code=code, national_number=int(national))
    if national[0] == "0":
        number.italian_leading_zero = True
        number.number_of_leading_zeros = len(national) - len(national.lstrip("0"))
    if region is not None:
        return phonenumbers.is_valid_number_for_region(number, region)
    if code == 1:
        return any(phonenumbers.is_valid_number_for_region(number, r) for r in ("US", "CA")) or (
            phonenumbers.is_valid_number(number)
        )
    return phonenumbers.is_valid_number(number)


def _numbers(rng: random.Random, count: int) -> list[str]:
    out = []
    for _ in range(count):
        length = rng.randint(4, 14)
        out.append("".join(rng.choice("0123456789") for _ in range(length)))
    return out


@pytest.mark.parametrize("code", sorted(phonenumbers.COUNTRY_CODE_TO_REGION_CODE))
def test_every_calling_code_agrees(code):
    rng = random.Random(code)
    valid_examples = []
    for region in phonenumbers.COUNTRY_CODE_TO_REGION_CODE[code]:
        example = phonenumbers.example_number(region) if region != "001" else None
        if example is not None:
            valid_examples.append(phonenumbers.national_significant_number(example))
    candidates = valid_examples + _numbers(rng, 150)
    for national in candidates:
        assert checks._valid(code, national) == reference(code, national), (code, national)
    assert all(checks._valid(code, n) for n in valid_examples)


@pytest.mark.parametrize("region", sorted(set(checks.NATIONAL_REGIONS + checks.UNPREFIXED_REGIONS)))
def test_the_national_regions_agree(region):
    rng = random.Random(region)
    code = phonenumbers.country_code_for_region(region)
    examples = [phonenumbers.example_number_for_type(region, t) for t in range(11)]
    candidates = [phonenumbers.national_significant_number(e) for e in examples if e is not None]
    candidates += _numbers(rng, 400)
    for national in candidates:
        assert checks._valid(code, national, region) == reference(code, national, region), (region, national)
        assert checks._valid(code, national, "ZZ") is False
