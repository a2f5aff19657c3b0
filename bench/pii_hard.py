"""Values of the classes an outside labelled corpus found the recognizers missing (issue 20), and
hard negatives shaped like them, for the ``layouts`` and ``layouts-fresh`` splits of the corpus.

- `phone_layout`: phone numbers as people write them whatever libphonenumber's metadata says of the
  number: North American numbers with unassigned area codes in every usual layout (``(545) 741-4436``,
  ``+1 (545) 741-4436``, ``545.741.4436``, ``001-545-741-4436``, ``545-741-4436x123``), European
  mobiles in spaced international form (``+44 7700 900123``, ``+49 151 2345 6789``,
  ``+33 6 12 34 56 78``...) drawn from the countries' mobile ranges rather than from the metadata,
  and trunk-0 national numbers of British, German and French shape with made-up area codes.
- `phone_bare`: a bare run of digits (``5457414436``): a phone number only after a word that says
  so ("phone", "Telefon", "電話"), which the templates put before it.
- `ipv6_full`: an IPv6 address written out in full, lower case, every group four digits.
- `jwt_opaque`: a JWT-shaped token (an ``eyJ`` header, two more base64url parts) whose payload is
  not JSON (encrypted, compressed or simply opaque bytes).
- `hard_negative`: order numbers, dates, versions, prices, hex hashes, UUIDs, timestamps, ISBNs,
  tracking numbers, ordinary base64 and dotted base64 triples that are not JWTs.

Every generator draws from the ``rng`` it is given, so a split is the same on every run.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import random
import string

import phonenumbers

H = "0123456789abcdef"
B64URL = string.ascii_letters + string.digits + "-_"


def _d(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def _h(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(H) for _ in range(n))


def _nanp_parts(rng: random.Random) -> tuple[str, str, str]:
    """Area code and exchange of NANP shape ([2-9]XX), most of them ones libphonenumber calls
    unassigned (the class an outside corpus showed missing); the rest any."""
    for _ in range(100):
        area = str(rng.randint(2, 9)) + _d(rng, 2)
        exchange = str(rng.randint(2, 9)) + _d(rng, 2)
        line = _d(rng, 4)
        number = phonenumbers.parse(f"+1{area}{exchange}{line}", None)
        if rng.random() < 0.2 or not phonenumbers.is_valid_number(number):
            return area, exchange, line
    return area, exchange, line


NANP_LAYOUTS = [
    "({a}) {e}-{l}",
    "({a}){e}-{l}",
    "{a}-{e}-{l}",
    "{a}.{e}.{l}",
    "{a} {e} {l}",
    "+1 ({a}) {e}-{l}",
    "+1-{a}-{e}-{l}",
    "+1 {a} {e} {l}",
    "+1.{a}.{e}.{l}",
    "1-{a}-{e}-{l}",
    "1 ({a}) {e}-{l}",
    "001-{a}-{e}-{l}",
    "+1{a}{e}{l}",
    "{a}-{e}-{l}x{x}",
    "({a}) {e}-{l} x{x}",
    "+1-{a}-{e}-{l}x{x}",
]

# Country code, mobile prefixes, national significant number length, groupings people write.
EU_MOBILES: list[tuple[str, list[str], int, list[list[int]]]] = [
    ("44", ["7700 900", "7911", "7400", "7123", "7984", "7557"], 10, [[4, 6], [4, 3, 3]]),
    ("49", ["151", "152", "157", "160", "162", "170", "171", "176", "179"], 11, [[3, 4, 4], [4, 7], [3, 8]]),
    ("49", ["170", "171", "175"], 10, [[3, 7], [3, 3, 4]]),
    ("33", ["6", "7"], 9, [[1, 2, 2, 2, 2]]),
    ("34", ["6", "71", "72", "73"], 9, [[3, 2, 2, 2], [3, 3, 3]]),
    ("39", ["31", "32", "33", "34", "35", "36", "38", "39"], 10, [[3, 3, 4], [3, 7]]),
    ("31", ["6"], 9, [[1, 4, 4], [1, 8], [1, 2, 3, 3]]),
    ("32", ["46", "47", "48", "49"], 9, [[3, 2, 2, 2]]),
    ("41", ["75", "76", "77", "78", "79"], 9, [[2, 3, 2, 2]]),
    ("43", ["650", "660", "664", "676", "680", "699"], 10, [[3, 7], [3, 3, 4]]),
    ("46", ["70", "72", "73", "76", "79"], 9, [[2, 3, 2, 2], [2, 3, 4]]),
    ("48", ["5", "6", "7", "88"], 9, [[3, 3, 3]]),
    ("351", ["91", "92", "93", "96"], 9, [[3, 3, 3]]),
    ("353", ["83", "85", "86", "87", "89"], 9, [[2, 3, 4]]),
    ("45", ["2", "3", "4", "5"], 8, [[2, 2, 2, 2], [4, 4]]),
    ("47", ["4", "9"], 8, [[3, 2, 3], [2, 2, 2, 2]]),
    ("358", ["40", "41", "44", "45", "50"], 9, [[2, 3, 4], [2, 7]]),
    ("30", ["69"], 10, [[3, 3, 4]]),
    ("420", ["60", "70", "73", "77"], 9, [[3, 3, 3]]),
]


def _grouped(digits: str, groups: list[int], sep: str) -> str:
    out, i = [], 0
    for n in groups:
        out.append(digits[i : i + n])
        i += n
    return sep.join(out)


def eu_mobile(rng: random.Random) -> str:
    code, prefixes, length, groupings = rng.choice(EU_MOBILES)
    prefix = rng.choice(prefixes).replace(" ", "")
    nsn = prefix + _d(rng, length - len(prefix))
    groups = rng.choice(groupings)
    sep = rng.choices([" ", "-", "."], weights=[8, 1, 1])[0]
    lead = rng.choices(["+", "00"], weights=[9, 1])[0]
    body = _grouped(nsn, groups, sep)
    if code in ("44", "49", "31", "41", "43") and rng.random() < 0.15:
        return f"{lead}{code} (0){body}" if rng.random() < 0.5 else f"{lead}{code} (0) {body}"
    return f"{lead}{code} {body}"


def national_trunk(rng: random.Random) -> str:
    """A trunk-0 national number of British, German or French shape, area code made up."""
    shape = rng.randrange(5)
    if shape == 0:  # GB: 01632 960123, 0113 496 0123
        return rng.choice([f"01{_d(rng, 3)} {_d(rng, 6)}", f"01{_d(rng, 2)} {_d(rng, 3)} {_d(rng, 4)}"])
    if shape == 1:  # GB mobile written nationally
        return f"07{_d(rng, 3)} {_d(rng, 6)}"
    if shape == 2:  # DE: (0xxxx) xxxxxx, 0xxx-xxxxxxx
        area = "0" + str(rng.randint(2, 9)) + _d(rng, rng.randint(1, 3))
        rest = _d(rng, 11 - len(area))
        return rng.choice([f"({area}) {rest}", f"{area} {rest}", f"{area}-{rest}"])
    if shape == 3:  # FR: 0x xx xx xx xx
        return " ".join([f"0{rng.randint(1, 9)}", *(_d(rng, 2) for _ in range(4))])
    return f"0{rng.randint(2, 9)}{_d(rng, 1)} {_d(rng, 3)} {_d(rng, 4)}"  # GB/AU-like 0xx xxx xxxx


def phone_layout(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.45:
        area, exchange, line = _nanp_parts(rng)
        layout = rng.choice(NANP_LAYOUTS)
        return layout.format(a=area, e=exchange, l=line, x=_d(rng, rng.randint(2, 5)))
    if pick < 0.85:
        return eu_mobile(rng)
    return national_trunk(rng)


def phone_bare(rng: random.Random) -> str:
    area, exchange, line = _nanp_parts(rng)
    return rng.choice([f"{area}{exchange}{line}", f"1{area}{exchange}{line}"])


def ipv6_full(rng: random.Random) -> str:
    groups = [rng.getrandbits(16) for _ in range(8)]
    if rng.random() < 0.5:
        groups[0] = rng.choice([0x2001, 0xFE80, 0x2A02, 0x2600, 0xFD00])
    if rng.random() < 0.5:
        for i in rng.sample(range(1, 7), rng.randint(1, 4)):
            groups[i] = 0
    return ipaddress.IPv6Address(":".join(f"{g:x}" for g in groups)).exploded


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwt_opaque(rng: random.Random) -> str:
    header = {"alg": rng.choice(["HS256", "RS256", "ES256", "dir", "RSA-OAEP"]), "typ": "JWT"}
    if rng.random() < 0.4:
        header["kid"] = _h(rng, rng.choice([8, 16]))
    if header["alg"] in ("dir", "RSA-OAEP"):
        header["enc"] = "A256GCM"
    head = _b64url(json.dumps(header, separators=(",", ":")).encode())
    payload = _b64url(bytes(rng.getrandbits(8) for _ in range(rng.randint(12, 180))))
    signature = _b64url(bytes(rng.getrandbits(8) for _ in range(rng.choice([32, 48, 64, 256]))))
    return f"{head}.{payload}.{signature}"


def _isbn13(rng: random.Random) -> str:
    body = "978" + _d(rng, 9)
    check = (10 - sum(int(c) * (3 if i % 2 else 1) for i, c in enumerate(body)) % 10) % 10
    return f"{body[:3]}-{body[3]}-{body[4:6]}-{body[6:12]}-{check}"


def _isbn10(rng: random.Random) -> str:
    body = str(rng.randint(0, 1)) + _d(rng, 8)
    total = sum((10 - i) * int(c) for i, c in enumerate(body))
    check = (11 - total % 11) % 11
    return f"{body[0]}-{body[1:4]}-{body[4:9]}-{'X' if check == 10 else check}"


def hard_negative(rng: random.Random) -> str:
    """Something shaped like a phone number, an address or a token that is none of them."""
    pick = rng.randrange(26)
    return [
        lambda: f"{_d(rng, 3)}-{_d(rng, 7)}-{_d(rng, 7)}",  # a marketplace order number
        lambda: f"ORD-{rng.randint(2019, 2026)}-{_d(rng, 6)}",
        lambda: f"#{rng.randint(100000, 9999999)}",
        lambda: f"{rng.randint(2000, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        lambda: f"{rng.randint(1, 28):02d}.{rng.randint(1, 12):02d}.{rng.randint(2000, 2026)}",
        lambda: f"{rng.randint(1, 12):02d}/{rng.randint(1, 28):02d}/{rng.randint(2000, 2026)}",
        lambda: f"{rng.randint(2000, 2026)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}",
        lambda: f"{rng.randint(1, 15)}.{rng.randint(0, 9)}.{rng.randint(10000, 22999)}.{rng.randint(100, 4999)}",
        lambda: f"v{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 200)}",
        lambda: f"{rng.randint(3, 6)}.{rng.randint(1, 19)}.{rng.randint(0, 99)}-{rng.randint(1, 40)}-amd64",
        lambda: f"${rng.randint(1, 99)},{_d(rng, 3)}.{_d(rng, 2)}",
        lambda: f"{rng.randint(1, 999)} {_d(rng, 3)},{_d(rng, 2)} €",
        lambda: f"USD {rng.randint(1, 99)},{_d(rng, 3)},{_d(rng, 3)}.{_d(rng, 2)}",
        lambda: _h(rng, rng.choice([7, 12, 40, 64])),
        lambda: f"{_h(rng, 8)}-{_h(rng, 4)}-4{_h(rng, 3)}-{rng.choice('89ab')}{_h(rng, 3)}-{_h(rng, 12)}",
        lambda: str(rng.randint(1_500_000_000, 1_800_000_000)),
        lambda: str(rng.randint(1_500_000_000_000, 1_800_000_000_000)),
        lambda: (
            f"{rng.randint(2000, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            f"T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{_d(rng, 3)}Z"
        ),
        lambda: _isbn13(rng),
        lambda: _isbn10(rng),
        lambda: f"1Z{''.join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))}",
        lambda: f"{_d(rng, 4)} {_d(rng, 4)} {_d(rng, 4)}",  # a parcel tracking number
        lambda: base64.b64encode(bytes(rng.getrandbits(8) for _ in range(rng.randint(9, 60)))).decode(),
        lambda: base64.b64encode(rng.choice(["hello world", "user:password", "The quick brown fox"]).encode()).decode(),
        lambda: _b64url(json.dumps({"page": rng.randint(1, 99), "size": 50}).encode()),  # a JSON cursor, no dots
        lambda: ".".join(_b64url(bytes(rng.getrandbits(8) for _ in range(rng.randint(6, 30)))) for _ in range(3)),
    ][pick]()
