"""Migration routing 0008: rules stored while a url could redirect a webhook integration are rewritten
to what delivery now does with them, so the rule set can be saved again unchanged."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from privacy.models import PiiPolicy
from routing.models import RoutingRule, RuleSet
from tests.factories import IntegrationFactory, RoutingRuleFactory

pytestmark = pytest.mark.django_db

migration = importlib.import_module("routing.migrations.0008_rule_urls_never_redirect_integrations")
OWN = "https://audit.example.com/in"
ELSEWHERE = "https://elsewhere.example.com/x"


def _dest(name: str, url: str | None = None, fallback: list | None = None) -> dict:
    out = {"name": name, "sample_rate": 1.0, "tags": []}
    if url:
        out["url"] = url
    out["fallback"] = fallback or []
    return out


@pytest.fixture
def hooks(team):
    IntegrationFactory(team=team, name="audit-hook", platform="webhook", config={"url": OWN, "headers": {}})
    IntegrationFactory(team=team, name="lf", platform="langfuse", config={})
    RuleSet.objects.create(team=team, version=4)


def _migrate_and_read(rule) -> list:
    migration.forwards(apps, None)
    rule.refresh_from_db()
    return rule.destinations


def test_another_url_becomes_an_ad_hoc_webhook_and_the_own_url_is_dropped(team, hooks, api):
    rule = RoutingRuleFactory(
        team=team,
        destinations=[_dest("audit-hook", ELSEWHERE), _dest("lf", fallback=[_dest("audit-hook", OWN)])],
    )

    assert _migrate_and_read(rule) == [_dest("webhook", ELSEWHERE), _dest("lf", fallback=[_dest("audit-hook")])]
    assert RuleSet.objects.get(team=team).version == 5
    # The stored set is valid again: sent back unchanged, it is saved.
    body = api.get("/api/v1/routing/rules").json()
    assert api.put("/api/v1/routing/rules", body, format="json").status_code == 200


def test_a_rule_with_nothing_to_rewrite_is_not_touched(team, hooks):
    rule = RoutingRuleFactory(team=team, destinations=[_dest("webhook", ELSEWHERE), _dest("audit-hook")])
    before = rule.updated_at

    assert _migrate_and_read(rule) == [_dest("webhook", ELSEWHERE), _dest("audit-hook")]
    assert RuleSet.objects.get(team=team).version == 4
    assert rule.updated_at == before


@pytest.mark.parametrize(
    "destinations",
    [
        # A "webhook" destination beside it, a fallback named webhook, a parent named webhook.
        [_dest("audit-hook", ELSEWHERE), _dest("webhook", "https://third.example.com/")],
        [_dest("audit-hook", ELSEWHERE, fallback=[_dest("webhook", "https://third.example.com/")])],
        [_dest("webhook", "https://third.example.com/", fallback=[_dest("audit-hook", ELSEWHERE)])],
    ],
)
def test_a_rename_that_would_collide_is_left_for_the_next_save_to_ask_about(team, hooks, destinations):
    rule = RoutingRuleFactory(team=team, destinations=destinations)
    assert _migrate_and_read(rule) == destinations


def test_an_integration_with_a_pii_entry_keeps_its_name_so_its_entry_still_applies(team, hooks):
    PiiPolicy.objects.create(team=team, destinations={"audit-hook": "redact"})
    rule = RoutingRuleFactory(team=team, destinations=[_dest("audit-hook", ELSEWHERE)])
    assert _migrate_and_read(rule) == [_dest("audit-hook", ELSEWHERE)]


def test_other_teams_integrations_do_not_count(team, other_team, hooks):
    rule = RoutingRuleFactory(team=other_team, destinations=[_dest("audit-hook", ELSEWHERE)])
    assert _migrate_and_read(rule) == [_dest("audit-hook", ELSEWHERE)]
    assert RoutingRule.objects.get(pk=rule.pk).destinations == [_dest("audit-hook", ELSEWHERE)]
