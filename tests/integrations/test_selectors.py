from __future__ import annotations

import pytest

from config.crypto import encrypt_json
from integrations.selectors import integration_names_and_platforms, resolve_target
from tests.factories import IntegrationFactory


def test_a_spec_naming_an_integration_resolves_to_it_with_secrets_and_merged_tags(team) -> None:
    integration = IntegrationFactory(
        team=team,
        name="lf",
        platform="langfuse",
        config={"publicKey": "pk", "host": "http://127.0.0.1:3000"},
        secrets=encrypt_json({"secretKey": "sk-secret"}),
        default_tags=["base", "shared"],
        metadata_mapping={"a": "b"},
        timeout_s=3.5,
    )

    found, target = resolve_target(team.pk, {"name": "lf", "tags": ["shared", "rule"]})

    assert found == integration
    assert target.platform == "langfuse"
    assert target.name == "lf"
    assert target.config == {"publicKey": "pk", "host": "http://127.0.0.1:3000", "secretKey": "sk-secret"}
    assert target.tags == ("base", "shared", "rule")
    assert target.metadata_mapping == {"a": "b"}
    assert target.timeout_s == 3.5


def test_a_platform_name_resolves_to_the_first_enabled_integration_of_that_platform(team) -> None:
    IntegrationFactory(team=team, name="zz-disabled", platform="helicone", config={}, enabled=False)
    first = IntegrationFactory(team=team, name="b-first", platform="helicone", config={})
    IntegrationFactory(team=team, name="a-second", platform="helicone", config={})

    found, target = resolve_target(team.pk, {"name": "helicone"})

    assert found == first
    assert target.name == "b-first"


def test_aliases_resolve(team) -> None:
    hook = IntegrationFactory(team=team, name="my-hook", platform="webhook")
    weave = IntegrationFactory(team=team, name="w", platform="weave", config={})

    assert resolve_target(team.pk, {"name": "custom-webhook"})[0] == hook
    assert resolve_target(team.pk, {"name": "wandb"})[0] == weave


def test_a_webhook_spec_with_a_url_and_no_integration_is_an_ad_hoc_target(team) -> None:
    found, target = resolve_target(
        team.pk, {"name": "custom-webhook", "url": "https://hooks.example.com/x", "tags": ["t"]}
    )

    assert found is None
    assert target.platform == "webhook"
    assert target.config == {"url": "https://hooks.example.com/x", "headers": {}}
    assert target.tags == ("t",)


@pytest.mark.parametrize("name", ["hook", "webhook", "custom-webhook"])
def test_a_spec_url_is_an_ad_hoc_webhook_with_nothing_of_the_webhook_integration(team, name) -> None:
    IntegrationFactory(
        team=team,
        name="hook",
        platform="webhook",
        config={"url": "http://127.0.0.1:1/a", "headers": {"X-Plain": "p"}},
        secrets=encrypt_json({"secret": "whsec-0123456789abcdef", "headers": {"Authorization": "Bearer t"}}),
        default_tags=["default"],
        metadata_mapping={"a": "b"},
        timeout_s=2,
    )

    found, target = resolve_target(team.pk, {"name": name, "url": "http://127.0.0.1:2/b", "tags": ["rule"]})

    assert found is None
    assert target.config == {"url": "http://127.0.0.1:2/b", "headers": {}}
    assert target.tags == ("rule",)
    assert target.metadata_mapping == {}
    assert target.timeout_s == 10.0


def test_a_spec_naming_a_webhook_integration_with_its_own_url_is_that_integration(team) -> None:
    hook = IntegrationFactory(
        team=team,
        name="hook",
        platform="webhook",
        config={"url": "http://127.0.0.1:1/a", "headers": {}},
        secrets=encrypt_json({"secret": "whsec-0123456789abcdef"}),
    )

    found, target = resolve_target(team.pk, {"name": "hook", "url": " http://127.0.0.1:1/a "})

    assert found == hook
    assert target.config["secret"] == "whsec-0123456789abcdef"


def test_a_url_on_another_platforms_destination_is_never_used(team) -> None:
    lf = IntegrationFactory(
        team=team, name="lf", platform="langfuse", config={"publicKey": "pk", "host": "http://127.0.0.1:3000"}
    )

    for name in ("lf", "langfuse"):
        found, target = resolve_target(team.pk, {"name": name, "url": "http://127.0.0.1:2/b"})
        assert found == lf
        assert target.config["host"] == "http://127.0.0.1:3000" and "url" not in target.config


@pytest.mark.parametrize("spec", [{"name": "nothing-here"}, {"name": "langfuse"}, {"name": "webhook"}, {"name": ""}])
def test_nothing_matching_is_a_lookup_error(team, spec) -> None:
    with pytest.raises(LookupError):
        resolve_target(team.pk, spec)


def test_a_disabled_named_integration_is_a_lookup_error(team) -> None:
    IntegrationFactory(team=team, name="off", platform="webhook", enabled=False)
    with pytest.raises(LookupError, match="disabled"):
        resolve_target(team.pk, {"name": "off"})


def test_other_teams_integrations_never_resolve(team, other_team) -> None:
    IntegrationFactory(team=other_team, name="theirs", platform="langfuse", config={})
    with pytest.raises(LookupError):
        resolve_target(team.pk, {"name": "theirs"})
    with pytest.raises(LookupError):
        resolve_target(team.pk, {"name": "langfuse"})


def test_names_and_platforms_for_rule_validation(team, other_team) -> None:
    IntegrationFactory(team=team, name="lf-prod", platform="langfuse", config={})
    IntegrationFactory(team=team, name="w", platform="weave", config={})
    IntegrationFactory(team=other_team, name="theirs", platform="datadog", config={})

    names = integration_names_and_platforms(team.pk)

    assert {"lf-prod", "langfuse", "w", "weave", "wandb", "webhook", "custom-webhook"} <= names
    assert "theirs" not in names and "datadog" not in names
