"""Classes an outside labelled corpus found the recognizers missing (issue 20), and look-alikes
of each: phone numbers in usual layouts whatever libphonenumber's metadata says, full lower-case
IPv6 addresses, JWTs whose payload is not JSON, and API keys of more issuers."""

from __future__ import annotations

import base64
import zlib

import phonenumbers
import pytest

from privacy.detection import scan


def found(text: str) -> list[tuple[str, str]]:
    return [(f.kind, text[f.start : f.end]) for f in scan(text)]


# A redactor errs toward redacting what is shaped like a phone number: the layout decides, not
# whether libphonenumber knows the range.


@pytest.mark.parametrize(
    "span",
    [
        "+1 (545) 741-4436",
        "(624) 691-2312",
        "(624)691-2312",
        "624-691-2312",
        "624.691.2312",
        "624 691 2312",
        "1-858-073-0215",
        "001-624-691-2312",
        "+1 545 741 4436",
        "+1.545.741.4436",
        "+15457414436",
    ],
)
def test_north_american_layouts_with_an_unassigned_area_code_are_phones(span):
    ten = "".join(ch for ch in span if ch.isdigit())[-10:]
    assert not phonenumbers.is_valid_number(phonenumbers.parse(f"+1{ten}"))  # unassigned: the class
    assert found(f"call me at {span} tomorrow") == [("PHONE", span)]


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("call 624-691-2312x123 today", "624-691-2312x123"),
        ("desk: (545) 741-4436 ext. 12, mornings", "(545) 741-4436 ext. 12"),
        ("+1-545-741-4436 x0556.", "+1-545-741-4436 x0556"),
    ],
)
def test_an_extension_is_part_of_the_phone_number(text, span):
    assert found(text) == [("PHONE", span)]


def test_a_number_glued_to_letters_is_not_a_phone_number_even_with_an_x():
    assert found("build 624-691-2312xyz and 624-691-2312abc") == []


@pytest.mark.parametrize(
    "span",
    [
        "+44 7700 900123",  # Ofcom's drama range: libphonenumber calls it invalid
        "+44 (0) 7700 900123",
        "(+44) 7700 900123",
        "+49 151 2345 6789",
        "0049 1512 3456789",
        "+33 6 12 34 56 78",
        "+34 612 34 56 78",
        "+39 312 345 6789",
        "+31 6 1234 5678",
        "+41 79 123 45 67",
        "+351 912 345 678",
    ],
)
def test_european_mobiles_in_spaced_international_form_are_phones(span):
    assert found(f"Handy: {span}, abends") == [("PHONE", span)]


@pytest.mark.parametrize(
    "span",
    ["01632 960123", "0113 496 0123", "(07123) 456789", "030/12345678", "0151/2345 6789", "8 (928) 775-74-47"],
)
def test_national_layouts_with_a_made_up_area_code_are_phones(span):
    assert found(f"Rückruf unter {span} bitte") == [("PHONE", span)]


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("My phone number is 5457414436.", "5457414436"),
        ('{"tel": "15457414436"}', "15457414436"),
        ("Telefonnummer 07700900123", "07700900123"),
        ("我的电话是13340562241。", "13340562241"),
        ("cellulare 3465807301", "3465807301"),
        ("Tel. 333 1234567", "333 1234567"),
        ("cell: 545 7414436", "545 7414436"),
        ("phone: 447700900123", "447700900123"),  # international, without its "+"
    ],
)
def test_a_bare_number_that_the_words_before_call_a_phone_number_is_one(text, span):
    assert found(text) == [("PHONE", span)]


@pytest.mark.parametrize(
    "text",
    [
        "order 5457414436 and 545 7414436",  # no word calls them phone numbers
        "phone changed at 1732352400",  # a Unix time
        "Tel 123-45-0000 or 94105-1234",  # never-issued SSN, ZIP+4: more than two groups or a dash
        "phone 12 345 678 and (2) 123 456 789",  # an amount, an enumerated amount
        "ISBN 0-306-40615-2, 0-19-852663-6 and 0-965-18546-X",  # one-digit groups
        "score +1 200 000",  # too short for a +1 number
        "marketplace order 112-3456789-1234567",
        "10 digits of a timestamp 1716200000 beside call",
        "phone: 1716200000123",  # a Unix time in ms is no international number
        "call about 5699647766193",  # an EAN-13
        "at 1978-07-22T08:30:08.188841 and 1995-06-19 10:50:08.459056",  # a time's seconds
        "ISBN 84-470-1746-X",  # a number before "-X" is part of a longer token
        "phone field empty; id 9741337041",  # the phone word is in another clause
    ],
)
def test_phone_shaped_look_alikes_are_left_alone(text):
    assert found(text) == []


def test_a_phone_word_speaks_of_the_first_number_after_it_only():
    text = "call me at +1 415 555 0132, order 9741337041"
    assert found(text) == [("PHONE", "+1 415 555 0132")]


def test_values_after_an_escaped_newline_or_tab_are_found():
    # JSON text inside JSON, log lines: the "n" of "\n" is not a word the value belongs to.
    text = r'{"log": "peer\n2001:0db8:85a3:0000:0000:8a2e:0370:7334\tclosed\n10.0.0.12\n+1 (545) 741-4436"}'
    assert found(text) == [
        ("IP_ADDRESS", "2001:0db8:85a3:0000:0000:8a2e:0370:7334"),
        ("IP_ADDRESS", "10.0.0.12"),
        ("PHONE", "+1 (545) 741-4436"),
    ]
    assert found(r"C:\new\t12345678 and xn12345678") == []


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("peer 2001:0db8:85a3:0000:0000:8a2e:0370:7334 closed", "2001:0db8:85a3:0000:0000:8a2e:0370:7334"),
        ("fe80:0000:0000:0000:0204:61ff:fe9d:f156: timeout", "fe80:0000:0000:0000:0204:61ff:fe9d:f156"),
        ("[2a02:0000:0000:1ab3:0000:42f3:0000:30fc]:443", "2a02:0000:0000:1ab3:0000:42f3:0000:30fc"),
        ("接続元0b59:79c0:78f8:6433:b678:decf:8229:bd5cです", "0b59:79c0:78f8:6433:b678:decf:8229:bd5c"),
    ],
)
def test_a_full_lower_case_ipv6_address_is_found(text, address):
    assert found(text) == [("IP_ADDRESS", address)]


@pytest.mark.parametrize(
    "text",
    ["mac 00:1a:2b:3c:4d:5e: up", "fe80::1:2: is compressed, so its colon is not an end", "at 12:30:45: done"],
)
def test_a_colon_ends_only_a_full_ipv6_address(text):
    assert [kind for kind, _ in found(text)] == []


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


HEADER = _b64url(b'{"alg":"RS256","typ":"JWT"}')
NONE_HEADER = _b64url(b'{"alg":"none"}')
JWE_HEADER = _b64url(b'{"alg":"dir","enc":"A256GCM"}')


@pytest.mark.parametrize(
    "token",
    [
        f"{HEADER}.{_b64url(bytes(range(7, 90)))}.{_b64url(bytes(range(64)))}",  # opaque payload
        f"{HEADER}.{_b64url(zlib.compress(b'{}' * 40))}.{_b64url(bytes(range(32)))}",  # compressed
        f"{NONE_HEADER}.{_b64url(b'not json at all')}.",  # alg none: no signature
        f"{JWE_HEADER}..{_b64url(bytes(12))}.{_b64url(bytes(range(40)))}.{_b64url(bytes(16))}",  # JWE, dir
    ],
)
def test_a_jwt_whose_payload_is_not_json_is_a_secret(token):
    assert found(f"Authorization: Bearer {token}\n") == [("SECRET", token)]


@pytest.mark.parametrize(
    "text",
    [
        "cursor eyJwYWdlIjoyLCJzaXplIjo1MH0 next",  # base64 JSON, one part
        "basic SGVsbG8gd29ybGQ= and dXNlcjpwYXNzd29yZA==",  # ordinary base64
        "parts aGVsbG8x.d29ybGQx.Zm9vYmFyYmF6 without a JSON header",
        "file eyJhbGciOiJIUzI1NiJ9.json",
    ],
)
def test_base64_that_is_not_jwt_shaped_is_left_alone(text):
    assert found(text) == []


@pytest.mark.parametrize(
    "token",
    [
        "sk_live_" + "4eC39HqLyjWD0rjtT1zdp7dcAb",  # Stripe
        "rk_test_" + "51H8abcdEFGHijkl0123456789",
        "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",  # Google
        "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",  # Hugging Face
        "glpat-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn",  # GitLab
        "npm_" + "a1B2" * 9,
        "SG." + "aB3" * 7 + "x." + "Cd4" * 14 + "y",  # SendGrid
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0=.dBjftJeZ4CVPmB92K27uhbUJU1p1r",  # a JWT with its padding
    ],
)
def test_api_keys_of_more_issuers_are_secrets(token):
    assert found(f"key={token}\n") == [("SECRET", token)]


@pytest.mark.parametrize(
    "text",
    ["sk_test_placeholder_for_the_docs", "hf_the_model_card_of_this_repository", "AIza is a prefix", "SG.foo.bar"],
)
def test_token_prefixes_without_a_token_are_left_alone(text):
    assert found(text) == []


def test_no_break_and_thin_spaces_group_digits_like_spaces():
    text = "appelez le 06\u00a012\u00a034\u00a056\u00a078 ou +33\u202f6\u202f12\u202f34\u202f56\u202f78, 14\u20092004"
    assert found(text) == [
        ("PHONE", "06\u00a012\u00a034\u00a056\u00a078"),
        ("PHONE", "+33\u202f6\u202f12\u202f34\u202f56\u202f78"),
    ]
    assert found("Tel. 0151\u20112345678") == [("PHONE", "0151\u20112345678")]
