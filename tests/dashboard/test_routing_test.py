"""/routing/test: the API's dry run on a trace typed into the form or on the team's recent traces,
under the saved rules; every role sees the page, members and up run it (they send test traces)."""

from __future__ import annotations

import re

import pytest

from routing import edits
from routing.router import sample_point
from routing.views.test import sampling_words
from traces.models import Trace

from ..factories import IntegrationFactory, TraceFactory
from .conftest import ROLES

pytestmark = pytest.mark.django_db

TYPED = {
    "source": "typed",
    "id": "checkout-42",
    "model": "gpt-4o",
    "provider": "",
    "status": "error",
    "environment": "production",
    "prompt_tokens": "1200",
    "completion_tokens": "300",
    "latency_ms": "800",
    "tags": "beta",
    "metadata": '{"env": "prod"}',
}


@pytest.fixture
def rules(team):
    IntegrationFactory(team=team, name="lf-prod", platform="langfuse", config={})
    IntegrationFactory(team=team, name="audit-hook", platform="webhook")
    version = 0
    for rule in [
        {"name": "errors", "priority": 10, "conditions": {"error": True}, "destinations": ["lf-prod"]},
        {"name": "cheap", "priority": 20, "condition": "cost < 0.001", "destinations": ["audit-hook"]},
        {"name": "none of it", "priority": 30, "destinations": [{"name": "audit-hook", "sample_rate": 0.0}]},
    ]:
        header, _ = edits.rule_save(team_id=team.pk, rule=rule, rule_id=None, version=version, actor="test")
        version = header.version


@pytest.mark.parametrize("role", ROLES)
def test_every_role_sees_the_page_and_members_and_up_may_run_it(as_role, role, rules):
    text = as_role(role).get("/routing/test").content.decode()
    assert "Test this trace" in text and "Under 3 rules (version 3)" in text
    runs = role != "viewer"
    assert ('<fieldset class="plain" disabled>' in text) == (not runs)
    response = as_role(role).post("/routing/test", TYPED)
    assert response.status_code == (200 if runs else 403)


@pytest.mark.parametrize("role", ["owner", "admin", "member"])
def test_a_typed_trace_shows_who_would_receive_it_and_why(as_role, role, rules):
    response = as_role(role).post("/routing/test", TYPED, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    text = response.content.decode()
    assert "<html" not in text and 'id="results"' in text
    assert "checkout-42" in text
    assert "Would send to <strong>lf-prod</strong>" in text
    assert '<td class="trial-matched"><span class="badge badge-success">yes</span> errors, none of it</td>' in text
    point = sample_point("checkout-42")
    assert f"audit-hook sampled out: {point:.2f} is not under the rate 0" in text  # in words
    assert not re.search(r"\bsent\b", text.replace("nothing was sent", ""))  # a dry run sends nothing
    assert "condition did not match" in text  # "cheap": gpt-4o at 1,500 tokens costs $0.006


def test_an_unpriced_model_says_cost_unknown(as_role, rules):
    response = as_role("member").post("/routing/test", {**TYPED, "model": "my-own-model", "status": "success"})
    text = response.content.decode()
    assert "unpriced" in text and "cost unknown: model unpriced" in text
    assert "Would go nowhere" in text


def test_bad_trace_fields_are_errors_next_to_them(as_role, rules):
    response = as_role("member").post("/routing/test", {**TYPED, "model": "", "prompt_tokens": "many", "metadata": "{"})
    assert response.status_code == 400
    text = response.content.decode()
    assert 'id="trace-metadata_error"' in text and "Not valid JSON" in text
    assert 'value="many"' in text
    response = as_role("member").post("/routing/test", {**TYPED, "model": "", "prompt_tokens": "many"})
    assert response.status_code == 400
    text = response.content.decode()
    assert 'id="trace-model_error"' in text and 'id="trace-prompt_tokens_error"' in text


def test_recent_traces_are_tested_with_their_own_ids(as_role, team, rules):
    TraceFactory(team=team, model="gpt-4o", status="error")
    TraceFactory(team=team, model="gpt-4o-mini")
    response = as_role("member").post("/routing/test", {"source": "recent", "count": "10"})
    assert response.status_code == 200
    text = response.content.decode()
    assert "2 recent traces" in text
    for trace in Trace.objects.filter(team=team):
        assert f'href="/traces/{trace.trace_id}"' in text
    response = as_role("member").post("/routing/test", {"source": "recent", "count": "1000"})
    assert response.status_code == 400 and "Choose 10, 25, 50 traces." in response.content.decode()


def test_recent_traces_are_this_teams_only(as_role, team, other_team, rules):
    theirs = TraceFactory(team=other_team, model="gpt-4o")
    text = as_role("owner").post("/routing/test", {"source": "recent", "count": "10"}).content.decode()
    assert theirs.trace_id not in text and "No traces yet" in text


def test_the_sampling_decision_is_said_in_words():
    assert sampling_words(0.6767, 0.9, True) == "kept: 0.68 is under the rate 0.9"
    assert sampling_words(0.6767, 0.5, False) == "sampled out: 0.68 is not under the rate 0.5"
    assert sampling_words(0.8951, 0.9, True) == "kept: 0.895 is under the rate 0.9"  # not "0.90 is under 0.9"
    assert sampling_words(0.29996, 0.3, True) == "kept: 0.29996 is under the rate 0.3"
    assert sampling_words(0.42, 1.0, True) == ""  # a rate of 1 samples nothing out: nothing to explain


def test_recent_traces_are_one_table_row_each(as_role, team, rules):
    TraceFactory.create_batch(25, team=team, model="gpt-4o", status="error")
    text = as_role("member").post("/routing/test", {"source": "recent", "count": "25"}).content.decode()
    assert "25 recent traces" in text
    assert text.count('<tr class="test-result"') == 25 and text.count("trial-table") == 1
    assert text.count("Would send to <strong>lf-prod</strong>") == 25
    assert "How each rule fared" not in text  # per rule only for one typed trace


def test_the_form_takes_the_token_parts(as_role, team):
    IntegrationFactory(team=team, name="cache-hook", platform="webhook")
    rule = {"name": "mostly cached", "condition": "cached_tokens * 2 > prompt_tokens", "destinations": ["cache-hook"]}
    edits.rule_save(team_id=team.pk, rule=rule, rule_id=None, version=0, actor="test")
    page = as_role("member").get("/routing/test").content.decode()
    for name in ("cached_tokens", "cache_write_tokens", "reasoning_tokens"):
        assert f'name="{name}"' in page
    cached = as_role("member").post("/routing/test", {**TYPED, "status": "success", "cached_tokens": "1000"})
    assert "Would send to <strong>cache-hook</strong>" in cached.content.decode()
    plain = as_role("member").post("/routing/test", {**TYPED, "status": "success", "cached_tokens": "100"})
    assert "Would go nowhere" in plain.content.decode()
    for bad, field in [({"cached_tokens": "5000"}, "cached_tokens"), ({"reasoning_tokens": "x"}, "reasoning_tokens")]:
        refused = as_role("member").post("/routing/test", {**TYPED, **bad})
        assert refused.status_code == 400
        assert f'id="trace-{field}_error"' in refused.content.decode()
