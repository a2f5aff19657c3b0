"""Key environments: production may do everything, development and ci only what their scopes allow."""

from __future__ import annotations

import pytest
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from accounts.models import ENVIRONMENT_SCOPES, Scope
from accounts.permissions import scoped

from ..factories import ApiKeyFactory

pytestmark = pytest.mark.django_db


class RulesView(APIView):
    permission_classes = [scoped(Scope.RULES_READ, Scope.RULES_WRITE)]

    def get(self, request):
        return Response({"ok": True})

    def put(self, request):
        return Response({"ok": True})


def call(method: str, environment: str, team):
    key = ApiKeyFactory(team=team, environment=environment)
    request = getattr(APIRequestFactory(), method)("/x", {}, format="json", HTTP_AUTHORIZATION=f"Bearer {key._raw}")
    response = RulesView.as_view()(request)
    response.render()
    return response


@pytest.mark.parametrize(
    ("environment", "method", "status"),
    [
        ("production", "get", 200),
        ("production", "put", 200),
        ("development", "get", 200),
        ("development", "put", 403),
        ("ci", "get", 403),
        ("ci", "put", 403),
    ],
)
def test_the_key_environment_decides_what_it_may_do(team, environment, method, status):
    response = call(method, environment, team)
    assert response.status_code == status
    if status == 403:
        assert response["Content-Type"] == "application/problem+json"
        body = response.data
        assert body["type"].endswith("/insufficient-scope")
        assert body["required_scope"] in (Scope.RULES_READ, Scope.RULES_WRITE)
        assert environment in body["detail"]


def test_the_scopes_follow_the_design():
    assert ENVIRONMENT_SCOPES["production"] == frozenset(Scope.values)
    dev = ENVIRONMENT_SCOPES["development"]
    assert {Scope.INGEST, Scope.TRACES_READ, Scope.ANALYTICS_READ, Scope.RULES_READ, Scope.RULES_TEST} <= dev
    assert not {Scope.RULES_WRITE, Scope.INTEGRATIONS_WRITE, Scope.DELIVERIES_WRITE} & dev
    assert ENVIRONMENT_SCOPES["ci"] == {Scope.INGEST, Scope.TRACES_READ, Scope.PROXY}


def test_a_ci_key_may_not_read_deliveries_or_integrations_and_dev_may_not_write_them(ci_api, dev_api):
    for path in ("/api/v1/deliveries", "/api/v1/integrations"):
        r = ci_api.get(path)
        assert r.status_code == 403 and r["Content-Type"] == "application/problem+json"
        assert dev_api.get(path).status_code == 200
    r = dev_api.post(
        "/api/v1/integrations",
        {"name": "x", "platform": "webhook", "config": {"url": "https://example.com"}},
        format="json",
    )
    assert r.status_code == 403 and r.json()["required_scope"] == "integrations:write"
