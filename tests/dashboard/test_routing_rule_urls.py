"""The rule form's webhook URL: the URL guard's refusal and a url that would redirect a webhook
integration are form errors next to the field, and nothing is stored (issue 20, items 1 and 6)."""

from __future__ import annotations

import pytest

from integrations import urlguard
from routing.models import RoutingRule

from ..factories import IntegrationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def hook(team):
    return IntegrationFactory(
        team=team, name="audit-hook", platform="webhook", config={"url": "https://audit.example.com/in", "headers": {}}
    )


def test_the_rule_form_shows_the_guards_refusal_next_to_the_url(as_role, team, monkeypatch):
    monkeypatch.setattr(urlguard, "resolve_addresses", _no_dns)

    response = _post_new(as_role("admin"), "webhook", "http://2852039166/latest/meta-data/")

    assert response.status_code == 400
    text = response.content.decode()
    assert 'id="dest-0-url_error"' in text
    assert "This URL may not be used: 2852039166 (= 169.254.169.254) is a cloud metadata address." in text
    assert 'value="http://2852039166/latest/meta-data/"' in text  # kept as typed
    assert not RoutingRule.objects.filter(team=team).exists()


def test_the_rule_form_refuses_another_url_for_a_webhook_integration(as_role, team, hook):
    response = _post_new(as_role("admin"), "audit-hook", "https://elsewhere.example.com/steal")

    assert response.status_code == 400
    assert "sends only to its own URL" in response.content.decode().split('id="dest-0-url_error"')[1][:400]
    assert not RoutingRule.objects.filter(team=team).exists()


def _post_new(client, destination: str, url: str):
    post = {"name": "hooked", "mode": "every", "dest-0-name": destination, "dest-0-url": url, "version": 0}
    return client.post("/routing/rules/new", post)


def _no_dns(host: str) -> list:
    raise AssertionError(f"the guard looked {host!r} up: numeric addresses need no DNS")
