"""A stored integration's secrets never reach an address a rule names (issue 20, item 1).

Every platform's integration is configured against its loopback fake with credentials, custom
headers where the platform has them, a webhook signing secret, default tags and a metadata
mapping. A second server, the "elsewhere" a rule names in its ``url``, records all it gets. Whether
the url comes through the API (refused, or an ad-hoc webhook), from a rule stored before this check
(an outbox row, a fallback, a replay), the integration is only ever called at its own address, and
nothing of it reaches elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus
from integrations.services import IntegrationInput, integration_create
from tests.factories import TraceFactory
from tests.fakes import (
    FakeDatadog,
    FakeHelicone,
    FakeLangfuse,
    FakeLangSmith,
    FakeMlflow,
    FakeOtlpCollector,
    FakePhoenix,
    FakeServer,
    FakeWeave,
    FakeWebhookReceiver,
    Reply,
)

pytestmark = pytest.mark.django_db

SIGNING_SECRET = "whsec-SECRET-0123456789abcdef"
DEFAULT_TAG = "integration-default-tag"


@dataclass(frozen=True)
class Platform:
    fake: Callable[[], Any]
    config: Callable[[str], dict[str, Any]]
    secrets: tuple[str, ...]
    kept: Callable[[Any], int]  # traces the fake accepted and kept


HEADERS = {"Authorization": "Bearer hdr-SECRET-token", "X-Team-Key": "hdr-SECRET-key"}
PLATFORMS: dict[str, Platform] = {
    "webhook": Platform(
        lambda: FakeWebhookReceiver(secret=SIGNING_SECRET),
        lambda url: {"url": f"{url}/hook", "headers": {**HEADERS, "X-Plain": "plain-SECRET"}, "secret": SIGNING_SECRET},
        (SIGNING_SECRET, "hdr-SECRET-token", "hdr-SECRET-key", "plain-SECRET"),
        lambda fake: len(fake.traces),
    ),
    "otlp": Platform(
        lambda: FakeOtlpCollector(required_headers={"authorization": "Bearer hdr-SECRET-token"}),
        lambda url: {"endpoint": f"{url}/v1/traces", "headers": HEADERS},
        ("hdr-SECRET-token", "hdr-SECRET-key"),
        lambda fake: len(fake.spans),
    ),
    "phoenix": Platform(
        lambda: FakePhoenix(api_key="phoenix-SECRET"),
        lambda url: {"host": url, "apiKey": "phoenix-SECRET", "headers": {"X-Team-Key": "hdr-SECRET-key"}},
        ("phoenix-SECRET", "hdr-SECRET-key"),
        lambda fake: len(fake.spans),
    ),
    "mlflow": Platform(
        lambda: FakeMlflow(experiments=("7",), token="mlflow-SECRET"),
        lambda url: {"host": url, "experimentId": "7", "token": "mlflow-SECRET"},
        ("mlflow-SECRET",),
        lambda fake: len(fake.spans),
    ),
    "langfuse": Platform(
        lambda: FakeLangfuse(public_key="pk-lf-SECRET", secret_key="sk-lf-SECRET"),
        lambda url: {"publicKey": "pk-lf-SECRET", "secretKey": "sk-lf-SECRET", "host": url},
        ("sk-lf-SECRET", "cGstbGYtU0VDUkVU"),  # the Basic credentials as sent (base64 of "pk-lf-SECRET…")
        lambda fake: len(fake.spans),
    ),
    "langsmith": Platform(
        lambda: FakeLangSmith(api_key="lsv2-SECRET"),
        lambda url: {"apiKey": "lsv2-SECRET", "endpoint": url},
        ("lsv2-SECRET",),
        lambda fake: len(fake.runs),
    ),
    "helicone": Platform(
        lambda: FakeHelicone(api_key="sk-helicone-SECRET"),
        lambda url: {"apiKey": "sk-helicone-SECRET", "endpoint": url, "apiUrl": url},
        ("sk-helicone-SECRET",),
        lambda fake: len(fake.logs),
    ),
    "datadog": Platform(
        lambda: FakeDatadog(api_key="dd-SECRET"),
        lambda url: {"apiKey": "dd-SECRET", "mlApp": "shop", "endpoint": url},
        ("dd-SECRET",),
        lambda fake: len(fake.spans),
    ),
    "weave": Platform(
        lambda: FakeWeave(api_key="wandb-SECRET", project_id="acme/shop"),
        lambda url: {"apiKey": "wandb-SECRET", "entity": "acme", "project": "shop", "host": url},
        ("wandb-SECRET",),
        lambda fake: len(fake.spans),
    ),
}


@pytest.fixture
def elsewhere() -> Iterator[FakeWebhookReceiver]:
    """The address a rule names: checks that what it gets is our webhook format, unsigned."""
    with FakeWebhookReceiver(path="/collect") as server:
        yield server


@pytest.fixture(params=sorted(PLATFORMS))
def configured(request, team) -> Iterator[tuple[str, Platform, Any]]:
    """(platform, its description, its fake) with an integration named "stored" aimed at the fake."""
    platform = PLATFORMS[request.param]
    with platform.fake() as server:
        mapping = {"customer": "integration-mapped-key"}
        _integration(
            team,
            "stored",
            request.param,
            platform.config(server.url),
            default_tags=[DEFAULT_TAG],
            metadata_mapping=mapping,
        )
        yield request.param, platform, server


def _integration(team, name: str, platform: str, config: dict[str, Any], **kwargs: Any) -> None:
    data = IntegrationInput(
        name=name,
        platform=platform,
        config=config,
        default_tags=kwargs.get("default_tags", []),
        metadata_mapping=kwargs.get("metadata_mapping", {}),
        timeout_s=5,
        retry_policy={"max_attempts": 1},
    )
    integration_create(team_id=team.pk, data=data, actor="test")


def _leaks(server: FakeServer, secrets: tuple[str, ...]) -> list[str]:
    """Every secret (and the integration's default tag and mapped key) found in what ``server`` got."""
    found = []
    for request in server.requests:
        seen = json.dumps(request.headers) + request.content.decode("utf-8", "replace")
        found += [s for s in (*secrets, DEFAULT_TAG, "integration-mapped-key") if s in seen]
        found += [
            h for h in ("x-tracerelay-signature", "authorization", "x-team-key", "x-plain") if h in request.headers
        ]
    return found


def _row(team, spec: dict[str, Any], destination: str | None = None) -> Delivery:
    trace = TraceFactory(team=team, metadata={"customer": "acme"}, tags=["own-tag"])
    return Delivery.objects.create(
        team=team, trace=trace, destination=destination or spec["name"], spec={"fallback": [], **spec}
    )


# --- Through the API: refused, or an ad-hoc webhook -------------------------------------------------------


def test_a_rule_cannot_aim_an_integration_at_another_url(api, team, configured, elsewhere, published):
    platform, _, _ = configured
    for destination in ({"name": "stored", "url": elsewhere.url}, {"platform": platform, "url": elsewhere.url}):
        if platform == "webhook" and "platform" in destination:
            continue  # the webhook platform with a url is an ad-hoc webhook: the next test
        body = {"rules": [{"name": "r", "destinations": [destination]}]}
        response = api.put("/api/v1/routing/rules", body, format="json")
        assert response.status_code == 400, response.content
        assert "rules[0].destinations[0].url" in response.json()["errors"]


def test_an_ad_hoc_webhook_beside_any_integration_carries_none_of_it(api, team, configured, elsewhere, published):
    platform, description, server = configured
    url = f"{elsewhere.url}/collect"
    rules = {
        "rules": [
            {"name": "own", "destinations": ["stored"]},
            {"name": "ad hoc", "destinations": [{"platform": "custom-webhook", "url": url, "tags": ["rule-tag"]}]},
        ]
    }
    assert api.put("/api/v1/routing/rules", rules, format="json").status_code == 200

    response = api.post("/api/v1/traces", {"model": "gpt-4o", "metadata": {"customer": "acme"}}, format="json")
    assert response.status_code == 201, response.content
    rows = Delivery.objects.filter(trace__trace_id=response.json()["id"])
    assert sorted(r.destination for r in rows) == sorted(["stored", "webhook"])

    report = deliver_batch([r.pk for r in rows])

    assert report.delivered == 2, [(r.destination, r.last_error) for r in Delivery.objects.all()]
    assert elsewhere.problems == [] and len(elsewhere.traces) == 1
    sent = elsewhere.traces[0]
    assert sent["tags"] == ["rule-tag"]
    assert sent["metadata"] == {"customer": "acme"}
    assert _leaks(elsewhere, description.secrets) == []
    # The integration got its trace at its own address, with its credentials.
    assert server.problems == [] and description.kept(server) == 1
    assert Delivery.objects.get(trace__trace_id=sent["id"], destination="webhook").integration_id is None


# --- Rules stored before: outbox rows, fallbacks and replays ----------------------------------------------


def test_a_stored_url_never_redirects_an_integration(team, configured, elsewhere, published):
    platform, description, server = configured
    url = f"{elsewhere.url}/collect"
    by_name = _row(team, {"name": "stored", "url": url, "tags": ["rule-tag"]})
    by_platform = _row(team, {"name": platform, "url": url})

    report = deliver_batch([by_name.pk, by_platform.pk])

    assert report.delivered == 2, [(r.destination, r.last_error) for r in Delivery.objects.all()]
    assert _leaks(elsewhere, description.secrets) == []
    assert elsewhere.problems == []
    if platform == "webhook":
        # An ad-hoc webhook to the url (the rule's tags only); the integration is not called.
        assert sorted(t["id"] for t in elsewhere.traces) == sorted([by_name.trace.trace_id, by_platform.trace.trace_id])
        assert all(
            t["tags"] == ["own-tag", *(["rule-tag"] if t["id"] == by_name.trace.trace_id else [])]
            for t in elsewhere.traces
        )
        assert server.requests == []
        assert set(Delivery.objects.values_list("integration_id", flat=True)) == {None}
    else:
        # The url is never used: the integration is called at its own address.
        assert elsewhere.requests == []
        assert server.problems == [] and description.kept(server) == 2


def test_a_fallback_and_a_replay_with_a_stored_url_carry_none_of_the_webhook_integration(
    api, team, elsewhere, published
):
    description = PLATFORMS["webhook"]
    url = f"{elsewhere.url}/collect"
    with description.fake() as server:
        _integration(team, "stored", "webhook", description.config(server.url), default_tags=[DEFAULT_TAG])
        with FakeWebhookReceiver() as primary_server:
            _integration(team, "primary", "webhook", {"url": f"{primary_server.url}/hook"})
            primary_server.queue(Reply(422, {"error": "no"}))
            row = _row(team, {"name": "primary", "fallback": [{"name": "stored", "url": url, "fallback": []}]})
            deliver_batch([row.pk])
            fallback = Delivery.objects.get(fallback_of=row)
            elsewhere.queue(Reply(410, {"error": "gone"}))
            deliver_batch([fallback.pk])
            fallback.refresh_from_db()
            assert fallback.status == DeliveryStatus.DEAD

            assert api.post(f"/api/v1/deliveries/{fallback.pk}/replay").status_code == 202
            deliver_batch([fallback.pk])

        fallback.refresh_from_db()
        assert fallback.status == DeliveryStatus.DELIVERED, fallback.last_error
        assert len(elsewhere.requests) == 2  # the fallback's attempt (410) and the replay
        assert _leaks(elsewhere, description.secrets) == []
        assert server.requests == []


def test_a_stored_url_under_an_integrations_name_keeps_its_pii_entry(api, team, elsewhere, published):
    # A rule the migration left under the integration's name (it has a PII entry) goes out as an
    # ad-hoc webhook, redacted as that integration's traces are: never more than before.
    _integration(team, "stored", "webhook", {"url": "http://127.0.0.1:9/hook", "secret": SIGNING_SECRET})
    policy = {"stored": {"mode": "off"}, "destinations": {"stored": {"mode": "redact"}}}
    assert api.put("/api/v1/pii/policy", policy, format="json").status_code == 200
    trace = TraceFactory(team=team, input={"messages": [{"role": "user", "content": "mail ann@example.com"}]})
    row = Delivery.objects.create(
        team=team, trace=trace, destination="stored", spec={"name": "stored", "url": f"{elsewhere.url}/collect"}
    )

    assert deliver_batch([row.pk]).delivered == 1

    assert _leaks(elsewhere, (SIGNING_SECRET,)) == []
    content = elsewhere.traces[0]["input"]["messages"][0]["content"]
    assert "ann@example.com" not in content and "[EMAIL]" in content
