"""A range across a UTC midnight, answered by hour rows of two days (a 500 once: "column
reference "count" is ambiguous" in the merged read)."""

import pytest

pytestmark = pytest.mark.django_db


def test_a_range_across_midnight_answers(api):
    for body in (
        {"model": "gpt-4o", "prompt_tokens": 10, "completion_tokens": 5, "timestamp": "2025-12-31T23:30:00Z"},
        {"model": "gpt-4o", "prompt_tokens": 10, "completion_tokens": 5, "timestamp": "2026-01-01T00:30:00Z"},
    ):
        assert api.post("/api/v1/traces", body, format="json").status_code == 201
    response = api.get("/api/v1/analytics", {"since": "2025-12-31T23:00:00Z", "until": "2026-01-01T01:00:00Z"})
    assert response.status_code == 200, response.content
    assert response.json()["totals"]["count"] == 2
