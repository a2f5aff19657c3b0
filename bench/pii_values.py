"""Random but valid PII values, and look-alikes that are not PII, for the labelled corpus.

Every value is built the way the real thing is (Luhn digits, IBAN check digits, phone numbers that
libphonenumber calls valid for their region, SSNs outside the never-issued ranges), so a detector
that checks structure is measured on structure, and the look-alikes fail exactly those checks.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import random
import string

import phonenumbers
from phonenumbers import PhoneNumberFormat, PhoneNumberType

FIRST = ["jane", "john", "maria", "lukas", "sophie", "pierre", "carmen", "yuki", "hiroshi", "anna", "omar", "li"]
FIRST += ["mueller", "francois", "jose", "kenji", "emma", "noah", "lea", "mateo", "sakura", "david", "chloe"]
LAST = ["doe", "smith", "schmidt", "dubois", "garcia", "tanaka", "rossi", "nguyen", "kowalski", "silva", "ito"]
DOMAINS = ["example.com", "mail.example.de", "corp.example.fr", "example.co.uk", "example.es", "example.co.jp"]
DOMAINS += ["gmail.com", "outlook.com", "web.de", "orange.fr", "yahoo.co.jp", "company.io", "uni-example.edu"]

REGIONS = {
    "en": ["US", "GB", "CA", "AU", "IN"],
    "de": ["DE", "CH", "AT"],
    "fr": ["FR", "CH", "BE"],
    "es": ["ES", "MX"],
    "ja": ["JP"],
    "it": ["IT"],
    "pt": ["BR", "PT"],
    "nl": ["NL", "BE"],
    "pl": ["PL"],
    "sv": ["SE"],
    "zh": ["CN"],
}


def email(rng: random.Random) -> str:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    local = rng.choice(
        [
            f"{first}.{last}",
            f"{first[0]}{last}",
            f"{first}_{last}{rng.randint(1, 99)}",
            f"{first}+{rng.choice(['ai', 'test', 'billing'])}",
            f"{last}.{first}",
        ]
    )
    return f"{local}@{rng.choice(DOMAINS)}"


def phone(rng: random.Random, lang: str) -> str:
    region = rng.choice(REGIONS.get(lang, ["US"]))
    kind = rng.choice([PhoneNumberType.MOBILE, PhoneNumberType.FIXED_LINE])
    example = phonenumbers.example_number_for_type(region, kind) or phonenumbers.example_number(region)
    assert example is not None
    national = str(example.national_number)
    for _ in range(50):
        keep = max(2, len(national) - 5)
        candidate = national[:keep] + "".join(rng.choice(string.digits) for _ in range(len(national) - keep))
        number = phonenumbers.parse(f"+{example.country_code}{candidate}", None)
        if phonenumbers.is_valid_number(number):
            break
    else:
        number = example
    style = rng.random()
    if style < 0.5:
        return phonenumbers.format_number(number, PhoneNumberFormat.INTERNATIONAL)
    if style < 0.65:
        return phonenumbers.format_number(number, PhoneNumberFormat.E164)
    return phonenumbers.format_number(number, PhoneNumberFormat.NATIONAL)


def _luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return body + str((10 - total % 10) % 10)


def card(rng: random.Random, *, valid: bool = True) -> str:
    prefix, length = rng.choice(
        [
            ("4", 16),
            ("51", 16),
            ("55", 16),
            ("2221", 16),
            ("34", 15),
            ("37", 15),
            ("6011", 16),
            ("65", 16),
            ("3528", 16),
            ("62", 16),
        ]
    )
    digits = _luhn_complete(prefix, length, rng)
    if not valid:
        digits = digits[:-1] + str((int(digits[-1]) + rng.randint(1, 9)) % 10)
    style = rng.random()
    if length == 15:
        groups = [digits[:4], digits[4:10], digits[10:]]
    else:
        groups = [digits[i : i + 4] for i in range(0, 16, 4)]
    if style < 0.45:
        return " ".join(groups)
    if style < 0.7:
        return "-".join(groups)
    return digits


IBAN_SHAPES = {  # country: BBAN made of (alphabet, count) runs
    "DE": [(string.digits, 18)],
    "GB": [(string.ascii_uppercase, 4), (string.digits, 14)],
    "FR": [(string.digits, 10), (string.digits + string.ascii_uppercase, 11), (string.digits, 2)],
    "ES": [(string.digits, 20)],
    "IT": [(string.ascii_uppercase, 1), (string.digits, 10), (string.digits, 12)],
    "NL": [(string.ascii_uppercase, 4), (string.digits, 10)],
    "CH": [(string.digits, 17)],
    "AT": [(string.digits, 16)],
    "BE": [(string.digits, 12)],
    "PL": [(string.digits, 24)],
    "PT": [(string.digits, 21)],
}


def iban(rng: random.Random, *, valid: bool = True) -> str:
    country = rng.choice(sorted(IBAN_SHAPES))
    bban = "".join("".join(rng.choice(alphabet) for _ in range(n)) for alphabet, n in IBAN_SHAPES[country])
    check = 98 - int("".join(str(int(ch, 36)) for ch in bban + country + "00")) % 97
    if not valid:
        check = (check + rng.randint(1, 90)) % 97 + 2
        check = check if check <= 98 else 3
    compact = f"{country}{check:02d}{bban}"
    if rng.random() < 0.6:
        return " ".join(compact[i : i + 4] for i in range(0, len(compact), 4))
    return compact


def ssn(rng: random.Random, *, valid: bool = True) -> str:
    if valid:
        area = rng.choice([a for a in range(1, 900) if a != 666])
        group, serial = rng.randint(1, 99), rng.randint(1, 9999)
    else:
        area, group, serial = rng.choice(
            [
                (0, rng.randint(1, 99), 1234),
                (666, 12, 3456),
                (rng.randint(900, 999), 45, 6789),
                (123, 0, 4567),
                (321, 54, 0),
            ]
        )
    sep = "-" if rng.random() < 0.85 else " "
    return f"{area:03d}{sep}{group:02d}{sep}{serial:04d}"


def ip(rng: random.Random) -> str:
    if rng.random() < 0.65:
        first = rng.choice([10, 172, 192, rng.randint(1, 223)])
        return ".".join(str(x) for x in [first, rng.randint(0, 255), rng.randint(0, 255), rng.randint(1, 254)])
    groups = [rng.randint(0, 0xFFFF) for _ in range(8)]
    if rng.random() < 0.5:
        groups[rng.randint(2, 5)] = 0
        groups[rng.randint(2, 5)] = 0
    address = ipaddress.IPv6Address(":".join(f"{g:x}" for g in [0x2001, 0xDB8, *groups[2:]]))
    return address.compressed if rng.random() < 0.7 else address.exploded


def _chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


B62 = string.ascii_letters + string.digits
B64URL = B62 + "-_"


def secret(rng: random.Random) -> str:
    """A token of one issuer (AWS secret keys come with their context: see `aws_secret`)."""
    kind = rng.randrange(8)
    if kind == 0:
        return "sk-proj-" + _chars(rng, B64URL, rng.choice([48, 74, 156]))
    if kind == 1:
        return "sk-" + _chars(rng, B62, 48)
    if kind == 2:
        return "sk-ant-api03-" + _chars(rng, B64URL, 93) + "AA"
    if kind == 3:
        return rng.choice(["AKIA", "ASIA"]) + _chars(rng, string.ascii_uppercase + "234567", 16)
    if kind == 4:
        return rng.choice(["ghp_", "gho_", "ghs_"]) + _chars(rng, B62, 36)
    if kind == 5:
        return "github_pat_" + _chars(rng, B62, 22) + "_" + _chars(rng, B62, 59)
    if kind == 6:
        return f"xox{rng.choice('bpa')}-{rng.randint(10**10, 10**12)}-{rng.randint(10**10, 10**12)}-" + _chars(
            rng, B62, 24
        )
    header = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()).rstrip(b"=").decode()
    claims = {
        "sub": str(rng.randint(1, 10**6)),
        "iat": rng.randint(1_600_000_000, 1_800_000_000),
        "email_verified": True,
    }
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{payload}.{_chars(rng, B64URL, 43)}"


def aws_secret_value(rng: random.Random) -> str:
    return _chars(rng, B62 + "/+", 40)


def pem(rng: random.Random, newline: str = "\n") -> str:
    label = rng.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"])
    lines = [_chars(rng, B62 + "+/", 64) for _ in range(rng.randint(3, 8))]
    return newline.join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])


def negative(rng: random.Random) -> str:
    """Something a naive detector mistakes for PII."""
    pick = rng.randrange(30)
    h = string.hexdigits[:16]
    return [
        lambda: f"ORD-{rng.randint(2019, 2026)}-{rng.randint(100000, 999999)}",
        lambda: (
            f"{_chars(rng, h, 8)}-{_chars(rng, h, 4)}-4{_chars(rng, h, 3)}-a{_chars(rng, h, 3)}-{_chars(rng, h, 12)}"
        ),
        lambda: f"v{rng.randint(0, 20)}.{rng.randint(0, 40)}.{rng.randint(0, 99)}",
        lambda: f"{rng.randint(1, 12)}.{rng.randint(0, 9)}.{rng.randint(1000, 30000)}.{rng.randint(0, 999)}",
        lambda: _chars(rng, h, 40),
        lambda: _chars(rng, h, 7),
        lambda: (
            f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(10, 59)}:00Z"
        ),
        lambda: str(rng.randint(1_600_000_000, 1_800_000_000)),
        lambda: str(rng.randint(1_600_000_000_000, 1_800_000_000_000)),
        lambda: f"${rng.randint(1, 9)},{rng.randint(100, 999)}.{rng.randint(0, 99):02d}",
        lambda: f"{rng.randint(1, 999)},{rng.randint(0, 99):02d} €",
        lambda: card(rng, valid=False),
        lambda: ssn(rng, valid=False),
        lambda: iban(rng, valid=False),
        lambda: f"{rng.randint(256, 999)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}",
        lambda: ":".join(_chars(rng, "0123456789ABCDEF", 2) for _ in range(6)),
        lambda: f"978-{rng.randint(0, 9)}-{rng.randint(10, 99)}-{rng.randint(100000, 999999)}-{rng.randint(0, 9)}",
        lambda: f"{rng.randint(10000, 99999)}-{rng.randint(1000, 9999)}",
        lambda: f"1Z{_chars(rng, string.ascii_uppercase + string.digits, 16)}",
        lambda: _chars(rng, h, 64),
        lambda: f"INV-{rng.randint(0, 999999):06d}",
        lambda: f"{rng.randint(1, 28):02d}.{rng.randint(1, 12):02d}.{rng.randint(2000, 2026)}",
        lambda: f"{rng.randint(1, 28):02d}/{rng.randint(1, 12):02d}/{rng.randint(2000, 2026)}",
        lambda: f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
        lambda: f"api-{_chars(rng, h, 10)}-{_chars(rng, string.ascii_lowercase + string.digits, 5)}",
        lambda: f"{rng.randint(1, 9)},{rng.randint(100, 999)},{rng.randint(100, 999)}",
        lambda: (
            f"sk-{rng.choice(['learn', 'image'])}-{rng.choice(['pipeline', 'model'])}-{rng.choice(['notes', 'guide'])}"
        ),
        lambda: f"{rng.uniform(-90, 90):.4f}, {rng.uniform(-180, 180):.4f}",
        lambda: f"ext. {rng.randint(100, 9999)}",
        lambda: f"std::{rng.choice(['vector', 'map', 'string'])}<int>",
    ][pick]()
