"""POST /api/v1/pii/scan: the settings page's "try it" box."""

from __future__ import annotations

from privacy.api import MAX_SCAN_CHARS

URL = "/api/v1/pii/scan"
PROBLEM = "application/problem+json"
POLICY_URL = "/api/v1/pii/policy"


def scan(client, text):
    return client.post(URL, {"text": text}, format="json")


def test_it_returns_findings_and_the_redacted_text(api):
    text = "Mail jane@example.com, card 4111 1111 1111 1111"
    response = scan(api, text)
    assert response.status_code == 200, response.content
    assert response.json() == {
        "findings": [{"kind": "EMAIL", "start": 5, "end": 21}, {"kind": "CREDIT_CARD", "start": 28, "end": 47}],
        "redacted": "Mail [EMAIL], card [CREDIT_CARD]",
    }


def test_offsets_count_characters_in_non_ascii_text(api):
    text = "連絡先はtaro@example.jpです"
    finding = scan(api, text).json()["findings"][0]
    assert text[finding["start"] : finding["end"]] == "taro@example.jp"


def test_it_uses_the_teams_custom_patterns_and_kinds(api, other_api):
    body = {"kinds": ["EMAIL"], "custom_patterns": [{"name": "EMPLOYEE_ID", "regex": r"EMP-\d{6}"}]}
    assert api.put(POLICY_URL, body, format="json").status_code == 200
    text = "EMP-123456 wrote from jane@example.com about 4111 1111 1111 1111"
    assert scan(api, text).json()["redacted"] == "[EMPLOYEE_ID] wrote from [EMAIL] about 4111 1111 1111 1111"
    # Another team has neither the pattern nor the kinds filter.
    assert scan(other_api, text).json()["redacted"] == "EMP-123456 wrote from [EMAIL] about [CREDIT_CARD]"


def test_a_development_key_may_scan(dev_api):
    assert scan(dev_api, "a@example.com").status_code == 200


def test_a_ci_key_may_not(ci_api):
    response = scan(ci_api, "a@example.com")
    assert response.status_code == 403
    assert response.json()["required_scope"] == "pii:read"


def test_without_a_key_it_is_401(anon_api):
    assert scan(anon_api, "x").status_code == 401


def test_text_must_be_a_string(api):
    for body in ({}, {"text": 5}, {"text": None}, ["a"]):
        response = api.post(URL, body, format="json")
        assert response.status_code == 400, body
        assert response["Content-Type"] == PROBLEM
        assert "text" in response.json()["errors"]


def test_too_long_a_text_is_413(api):
    response = scan(api, "a" * (MAX_SCAN_CHARS + 1))
    assert response.status_code == 413
    assert response["Content-Type"] == PROBLEM
    assert scan(api, "a" * MAX_SCAN_CHARS).status_code == 200


def test_an_empty_text_has_no_findings(api):
    assert scan(api, "").json() == {"findings": [], "redacted": ""}
