"""A rule's webhook ``url``: one URL guard at every door a rule comes through (the rule set, one
service's rules as the SDK registers them, the dry run, the dashboard's form), and a url never
redirects an integration (issue 20, items 1 and 6)."""

from __future__ import annotations

import ipaddress

import pytest

from integrations import urlguard
from routing.models import RoutingRule
from tests.factories import IntegrationFactory

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"
# 169.254.169.254 and 0.0.0.0 as inet_aton reads them: decimal, hex, octal, a.b.c, a bare 0.
NUMERIC_METADATA = [
    "http://2852039166/latest/meta-data/",
    "http://0xa9fea9fe/",
    "http://0XA9FEA9FE./",
    "http://0251.0376.0251.0376/",
    "http://169.254.43518/",
    "http://0:8080/hook",
    "http://[::ffff:a9fe:a9fe]/",
]


def _problem(response, path: str) -> str:
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert path in body["errors"], body["errors"]
    return body["errors"][path][0]


def _rule(destination: dict) -> dict:
    return {"name": "hooked", "destinations": [destination]}


# --- The guard at every rule door ---------------------------------------------------------------------


def _put_rules(api, destination):
    return api.put("/api/v1/routing/rules", {"rules": [_rule(destination)]}, format="json"), "rules[0].destinations[0]"


def _put_service_rules(api, destination):
    # The SDK's routing_rules at start-up go here.
    url = "/api/v1/routing/rules/services/checkout-api"
    return api.put(url, {"rules": [_rule(destination)]}, format="json"), "rules[0].destinations[0]"


def _dry_run_rules(api, destination):
    body = {"trace": {"model": "gpt-4o"}, "rules": [_rule(destination)]}
    return api.post("/api/v1/routing/test", body, format="json"), "rules[0].destinations[0]"


def _dry_run_rule(api, destination):
    body = {"trace": {"model": "gpt-4o"}, "rule": _rule(destination)}
    return api.post("/api/v1/routing/test", body, format="json"), "rule.destinations[0]"


DOORS = [_put_rules, _put_service_rules, _dry_run_rules, _dry_run_rule]


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("url", NUMERIC_METADATA)
@pytest.mark.parametrize("spelling", ["name", "platform"])
def test_a_numeric_metadata_address_is_refused_at_every_rule_door(api, team, door, url, spelling, monkeypatch):
    # Without any DNS: the numeric forms are read as addresses by the guard itself.
    monkeypatch.setattr(urlguard, "resolve_addresses", _no_dns)
    response, path = door(api, {spelling: "custom-webhook", "url": url})

    message = _problem(response, f"{path}.url")

    assert message.startswith("This URL may not be used: ")
    assert "169.254.169.254" in message or "0.0.0.0" in message
    assert not RoutingRule.objects.filter(team=team).exists()


@pytest.mark.parametrize("door", DOORS)
def test_a_name_that_resolves_to_a_metadata_address_is_refused_at_every_rule_door(api, door, monkeypatch):
    # A hosts-file (or DNS) name for the metadata service: resolved when the rule is saved, as an
    # integration's URL is.
    urlguard.forget_resolutions()
    monkeypatch.setattr(urlguard, "resolve_addresses", _resolving({"imds.corp.example": "169.254.169.254"}))
    response, path = door(api, {"name": "webhook", "url": "https://imds.corp.example/latest"})

    message = _problem(response, f"{path}.url")

    assert "imds.corp.example resolves to 169.254.169.254 is a cloud metadata address" in message
    urlguard.forget_resolutions()


@pytest.mark.parametrize("url", ["http://hooks.example.com/a b", "http://hooks.example.com\\@169.254.169.254/"])
def test_spaces_and_backslashes_are_refused_in_a_rule_url(api, url):
    response, path = _put_rules(api, {"name": "webhook", "url": url})
    assert "no spaces, backslashes or control characters" in _problem(response, f"{path}.url")


def test_a_fallbacks_url_is_guarded_too_with_its_path(api, team, monkeypatch):
    monkeypatch.setattr(urlguard, "resolve_addresses", _no_dns)
    IntegrationFactory(team=team, name="lf", platform="langfuse", config={})
    destination = {"name": "lf", "fallback": [{"name": "webhook", "url": "http://169.254.43518/"}]}

    response, path = _put_rules(api, destination)

    assert "169.254.43518 (= 169.254.169.254)" in _problem(response, f"{path}.fallback[0].url")


def test_the_same_numeric_address_is_refused_the_same_way_for_an_integration_an_upstream_and_an_alert(api):
    url = "http://0xa9fea9fe/hook"
    integration = api.post(
        "/api/v1/integrations", {"name": "h", "platform": "webhook", "config": {"url": url}}, format="json"
    )
    upstream = api.post("/api/v1/upstreams", {"name": "u", "kind": "openai", "base_url": url}, format="json")
    alert = api.post(
        "/api/v1/alerts",
        {
            "name": "a",
            "metric": "cost",
            "threshold": 1,
            "window": {"type": "rolling", "minutes": 60},
            "notify": {"webhooks": [{"url": url}]},
        },
        format="json",
    )
    rule, path = _put_rules(api, {"name": "webhook", "url": url})

    messages = {
        _problem(integration, "config.url"),
        _problem(upstream, "base_url"),
        _problem(alert, "notify.webhooks[0].url"),
        _problem(rule, f"{path}.url"),
    }
    assert messages == {"This URL may not be used: 0xa9fea9fe (= 169.254.169.254) is a cloud metadata address."}


# --- A url never redirects an integration ------------------------------------------------------------


@pytest.fixture
def hook(team):
    return IntegrationFactory(
        team=team, name="audit-hook", platform="webhook", config={"url": "https://audit.example.com/in", "headers": {}}
    )


def test_naming_a_webhook_integration_with_another_url_is_refused_naming_the_field(api, team, hook):
    response, path = _put_rules(api, {"name": "audit-hook", "url": "https://elsewhere.example.com/steal"})

    message = _problem(response, f"{path}.url")

    assert "'audit-hook' is a webhook integration, which sends only to its own URL" in message
    assert "name the destination 'webhook' for an ad-hoc webhook" in message
    assert response.json()["detail"].startswith("Rule 'hooked' (rules[0].destinations[0].url): ")
    assert not RoutingRule.objects.filter(team=team).exists()


def test_a_refused_url_inside_a_fallback_names_its_path(api, team, hook):
    IntegrationFactory(team=team, name="lf", platform="langfuse", config={})
    destination = {"name": "lf", "fallback": [{"name": "audit-hook", "url": "https://elsewhere.example.com/"}]}
    response, path = _put_rules(api, destination)
    assert "sends only to its own URL" in _problem(response, f"{path}.fallback[0].url")


def test_naming_a_webhook_integration_with_its_own_url_is_that_integration(api, team, hook):
    response, _ = _put_rules(api, {"name": "audit-hook", "url": "https://audit.example.com/in"})

    assert response.status_code == 200, response.content
    assert response.json()["rules"][0]["destinations"][0] == {
        "name": "audit-hook",
        "sample_rate": 1.0,
        "tags": [],
        "fallback": [],
    }


@pytest.mark.parametrize("spelling", [{"name": "webhook"}, {"platform": "custom-webhook"}, {"name": "Custom-Webhook"}])
def test_the_webhook_platform_with_a_url_is_an_ad_hoc_webhook_even_beside_webhook_integrations(
    api, team, hook, spelling
):
    response, _ = _put_rules(api, {**spelling, "url": "https://elsewhere.example.com/in"})

    assert response.status_code == 200, response.content
    stored = response.json()["rules"][0]["destinations"][0]
    assert (stored["name"], stored["url"]) == ("webhook", "https://elsewhere.example.com/in")


def test_a_url_on_another_platform_is_still_refused(api, team):
    IntegrationFactory(team=team, name="lf", platform="langfuse", config={})
    response, path = _put_rules(api, {"name": "lf", "url": "https://elsewhere.example.com/in"})
    assert _problem(response, f"{path}.url") == "Only webhook destinations take a url."


def _no_dns(host: str) -> list:
    raise AssertionError(f"the guard looked {host!r} up: numeric addresses need no DNS")


def _resolving(names: dict[str, str]):
    def resolve(host: str) -> list:
        if host in names:
            return [ipaddress.ip_address(names[host])]
        raise OSError(f"{host} does not resolve")

    return resolve
