"""Each built-in kind: what it finds (exact spans) and the look-alikes it must leave alone."""

from __future__ import annotations

import pytest

from privacy.detection import BUILTIN_KINDS, Finding, scan


def found(text: str) -> list[tuple[str, str]]:
    return [(f.kind, text[f.start : f.end]) for f in scan(text)]


POSITIVES = [
    # EMAIL
    ("Contact jane.doe+billing@example.co.uk today", "EMAIL", "jane.doe+billing@example.co.uk"),
    ("<a href='mailto:o.brien@mail.example.ie'>", "EMAIL", "o.brien@mail.example.ie"),
    ('{"email":"x_y-z@sub.domain-name.io"}', "EMAIL", "x_y-z@sub.domain-name.io"),
    ("Schreiben Sie an müller@example.de? Nein: mueller@example.de.", "EMAIL", "mueller@example.de"),
    # PHONE, international and national formats of several countries
    ("call +1 415-555-0132 now", "PHONE", "+1 415-555-0132"),
    ("Tel.: +49 30 12345678", "PHONE", "+49 30 12345678"),
    ("appelez le +33 6 12 34 56 78", "PHONE", "+33 6 12 34 56 78"),
    ("llame al +34 612 34 56 78", "PHONE", "+34 612 34 56 78"),
    ("電話は+81 90-1234-5678まで", "PHONE", "+81 90-1234-5678"),
    ("phone: (415) 555-0132", "PHONE", "(415) 555-0132"),
    ("Festnetz 030 1234567", "PHONE", "030 1234567"),
    ("mobile 07400 123456 (UK)", "PHONE", "07400 123456"),
    ("call 0044 20 7946 0018", "PHONE", "0044 20 7946 0018"),
    # CREDIT_CARD: Luhn-valid numbers of real issuers, grouped or not
    ("card 4111 1111 1111 1111 exp 12/27", "CREDIT_CARD", "4111 1111 1111 1111"),
    ("card=5555555555554444;", "CREDIT_CARD", "5555555555554444"),
    ("amex 3782-822463-10005", "CREDIT_CARD", "3782-822463-10005"),
    ("Karte 6011 0009 9013 9424", "CREDIT_CARD", "6011 0009 9013 9424"),
    # IBAN
    ("IBAN DE89 3704 0044 0532 0130 00, BIC COBADEFFXXX", "IBAN", "DE89 3704 0044 0532 0130 00"),
    ("iban: GB82WEST12345698765432", "IBAN", "GB82WEST12345698765432"),
    ("FR1420041010050500013M02606", "IBAN", "FR1420041010050500013M02606"),
    ("ES91 2100 0418 4502 0005 1332", "IBAN", "ES91 2100 0418 4502 0005 1332"),
    # US_SSN
    ("SSN 123-45-6789.", "US_SSN", "123-45-6789"),
    ("ssn: 536 22 1234", "US_SSN", "536 22 1234"),
    # IP_ADDRESS
    ("from 192.168.1.20, port 443", "IP_ADDRESS", "192.168.1.20"),
    ("client=2001:db8:85a3::8a2e:370:7334 ok", "IP_ADDRESS", "2001:db8:85a3::8a2e:370:7334"),
    ("peer fe80::1ff:fe23:4567:890a", "IP_ADDRESS", "fe80::1ff:fe23:4567:890a"),
    ("host 10.0.0.1.", "IP_ADDRESS", "10.0.0.1"),
    # SECRET
    ("OPENAI_API_KEY=sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56", "SECRET", "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56"),
    ("key sk-ant-api03-AbCdEf0123456789_-GhIjKlMnOpQr", "SECRET", "sk-ant-api03-AbCdEf0123456789_-GhIjKlMnOpQr"),
    ("legacy sk-T3BlbkFJ0123456789abcdefABCDEF0123456789ab", "SECRET", "sk-T3BlbkFJ0123456789abcdefABCDEF0123456789ab"),
    ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "SECRET", "AKIAIOSFODNN7EXAMPLE"),
    (
        'aws_secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
        "SECRET",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("token ghp_0123456789abcdefghijABCDEFGHIJ012345", "SECRET", "ghp_0123456789abcdefghijABCDEFGHIJ012345"),
    (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "SECRET",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    ),
    ("slack xoxb-1234567890-0987654321-AbCdEfGh", "SECRET", "xoxb-1234567890-0987654321-AbCdEfGh"),
    (
        "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        "SECRET",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
    ),
]


@pytest.mark.parametrize(("text", "kind", "span"), POSITIVES, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(POSITIVES)])
def test_it_finds_the_exact_span(text, kind, span):
    assert (kind, span) in found(text)


def test_it_finds_a_pem_private_key_block_whole():
    block = (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n"
        "/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n-----END RSA PRIVATE KEY-----"
    )
    text = f"config:\n{block}\nend"
    assert found(text) == [("SECRET", block)]


def test_every_kind_is_covered_by_a_positive():
    assert {kind for _, kind, _ in POSITIVES} == set(BUILTIN_KINDS)


HARD_NEGATIVES = [
    "Order ORD-2024-883412 shipped on 2024-01-15T10:30:00Z",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "upgrade to v1.2.3.4 or 10.0.19041.1",
    "release 2.14.3 (build 20240115)",
    "commit 3f2a9c1d8e7b6a5f4c3d2e1f0a9b8c7d6e5f4a3b",
    "timestamp 1732352400 and 1732352400123",
    "it costs $1,299.99 or €1.299,99 or 12 345,00 zł",
    "at 12:30:45 on 15/01/2024 and 2024.01.15",
    "invoice INV-000123456 and PO 4500012345",
    "card-like but Luhn-invalid 4111 1111 1111 1112",
    "SSN-shaped but never issued: 000-12-3456, 666-12-3456, 912-34-5678, 123-00-4567, 123-45-0000",
    "IBAN with a bad checksum DE88 3704 0044 0532 0130 00",
    "not an address 999.10.10.10 nor 256.1.1.1",
    "OID 1.3.6.1.4.1.311",
    "std::vector<int> and Foo::Bar::baz and a::b",
    "MAC 00:1A:2B:3C:4D:5E",
    "ISBN 978-3-16-148410-0",
    "dimensions 120 x 80 x 45 mm, 3.5 kg",
    "zip 94105-1234",
    "decorator @app.route and @scope/package@1.2.3 and user@localhost",
    "the task-management-system-overview-document-for-sk-learners",
    "sk-this-is-a-long-slug-without-any-digits",
    "ext. 1234 and room 5551",
    "tracking 1Z999AA10123456784",
    "a sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "AWS region us-east-1 account 123456789012",
    "10.5 / 20.25 / 3.14159265358979",
]


@pytest.mark.parametrize("text", HARD_NEGATIVES)
def test_it_leaves_look_alikes_alone(text):
    assert found(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("連絡先はtaro@example.jpです。", [("EMAIL", 4, 19)]),
        ("Müller – Tel. +49 30 12345678 – Straße", [("PHONE", 14, 29)]),
        ("😀😀 4111111111111111 😀", [("CREDIT_CARD", 3, 19)]),
        ("電話090-1234-5678、IPは10.0.0.1", [("PHONE", 2, 15), ("IP_ADDRESS", 19, 27)]),
    ],
)
def test_offsets_are_characters_not_bytes(text, expected):
    assert [(f.kind, f.start, f.end) for f in scan(text)] == expected
    for kind, start, end in expected:
        assert text[start:end] == {f.kind: text[f.start : f.end] for f in scan(text)}[kind]


def test_findings_come_sorted_and_disjoint():
    text = "a@b.co 4111111111111111 sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12 +1 415-555-0132 10.0.0.1 " * 3
    findings = scan(text)
    assert len(findings) == 15
    assert findings == sorted(findings)
    assert all(a.end <= b.start for a, b in zip(findings, findings[1:], strict=False))


def test_an_iban_wins_over_the_digits_inside_it():
    # The digits of this IBAN also form an Amex-prefixed, Luhn-valid run: the longer finding wins.
    text = "IBAN DE89 3704 0044 0532 0130 00"
    assert found(text) == [("IBAN", "DE89 3704 0044 0532 0130 00")]


def test_numbers_side_by_side_are_found_apart():
    assert found("SSN 123-45-6789 415-555-0132") == [("US_SSN", "123-45-6789"), ("PHONE", "415-555-0132")]


def test_kinds_filter_leaves_the_others_out():
    text = "jane@example.com 4111 1111 1111 1111"
    assert [f.kind for f in scan(text, kinds={"CREDIT_CARD"})] == ["CREDIT_CARD"]
    assert scan(text, kinds=set()) == []


def test_a_finding_reads_as_the_api_shape():
    assert Finding(3, 9, "EMAIL").as_dict() == {"kind": "EMAIL", "start": 3, "end": 9}


def test_an_empty_or_clean_text_has_nothing():
    assert scan("") == []
    assert scan("lorem ipsum dolor sit amet, " * 100) == []


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("IP:2001:db8:85a3::8a2e:370:7334", "2001:db8:85a3::8a2e:370:7334"),
        ("ID:abcd:ef01:2345:6789:abcd:ef01:2345:6789 ok", "abcd:ef01:2345:6789:abcd:ef01:2345:6789"),
        ("peer=[2001:db8::dead:beef:1]:443", "2001:db8::dead:beef:1"),
    ],
)
def test_an_ipv6_address_after_a_label_is_found(text, address):
    assert found(text) == [("IP_ADDRESS", address)]


def test_the_digits_of_a_mistyped_iban_are_not_a_phone_number():
    # A GB IBAN with a bad check digit: its 14-digit account number also reads as a long national number.
    assert found("konto GB12 WEST 0188 1512 1257 54") == []


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("teléfono 612 34 70 28", "612 34 70 28"),
        ("tel (11) 96128-0598", "(11) 96128-0598"),
        ("UK +44 (0)20 7946 0958", "+44 (0)20 7946 0958"),
        ("cell 312 345 6789 (IT)", "312 345 6789"),
    ],
)
def test_national_numbers_written_without_a_trunk_zero_are_found(text, span):
    assert found(text) == [("PHONE", span)]


def test_a_luhn_invalid_card_does_not_leave_a_phone_number_behind():
    assert found("card 6559 8565 0666 6362") == []


def test_an_aws_key_id_of_letters_only_is_still_a_key():
    assert found("aws_access_key_id: AKIAXSPUBMXCJJNSLAXZ") == [("SECRET", "AKIAXSPUBMXCJJNSLAXZ")]


@pytest.mark.parametrize("span", ["12 341 77 50", "131 2342 2479", "08-123 456 78"])
def test_polish_chinese_and_swedish_national_numbers_are_found(span):
    assert found(f"tel. {span}") == [("PHONE", span)]
