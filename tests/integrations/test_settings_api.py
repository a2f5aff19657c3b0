"""The settings every integration carries in its config (environments, identity, transform, quota,
response validation) through the integrations API: stored as given, defaults left out, and every
bad value a problem+json naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from integrations.options.shaping import Shaping
from integrations.options.transform import TransformError, parse_transform
from tests.integrations.conftest import make_record

URL = "/api/v1/integrations"
PROBLEM = "application/problem+json"

SETTINGS = {
    "environments": ["staging", "dev"],
    "environment_map": {"dev": "development"},
    "send_user_id": False,
    "transform": [
        {"op": "drop", "path": "input"},
        {"op": "truncate", "path": "output", "max_chars": 2000},
        {"op": "rename", "path": "metadata.customer", "to": "metadata.account"},
        {"op": "set", "path": "metadata.source", "value": "tracerelay"},
        {"op": "hash", "path": "user_id"},
    ],
    "quota": {"max_per_minute": 600, "max_per_day": 100000, "over_quota": "sample"},
    "response_validation": {"status": [200, 202], "json_path": "errors", "body_must_contain": "ok"},
}


def webhook(**config: Any) -> dict[str, Any]:
    return {"name": "hook", "platform": "webhook", "config": {"url": "https://hooks.example.com/x", **config}}


def refused(api, body: dict[str, Any]) -> dict[str, list[str]]:
    response = api.post(URL, body, format="json")
    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith(PROBLEM)
    return response.json()["errors"]


def test_the_settings_are_stored_and_shown_as_given(api, team) -> None:
    response = api.post(URL, webhook(**SETTINGS), format="json")

    assert response.status_code == 201, response.content
    config = response.json()["config"]
    assert {k: config[k] for k in SETTINGS} == SETTINGS
    assert "send_session_id" not in config  # the default (true) is not stored


def test_defaults_and_empty_values_are_left_out(api, team) -> None:
    response = api.post(
        URL, webhook(environments=[], environment_map={}, send_user_id=True, transform=[]), format="json"
    )

    assert response.status_code == 201, response.content
    assert response.json()["config"] == {"url": "https://hooks.example.com/x", "headers": {}}


def test_a_patch_changes_one_setting_and_null_removes_it(api, team) -> None:
    created = api.post(URL, webhook(environments=["staging"], send_user_id=False), format="json").json()

    patched = api.patch(
        f"{URL}/{created['id']}", {"config": {"environments": None, "quota": {"max_per_day": 5}}}, format="json"
    )

    assert patched.status_code == 200, patched.content
    config = patched.json()["config"]
    assert "environments" not in config
    assert config["send_user_id"] is False
    assert config["quota"] == {"max_per_day": 5, "over_quota": "delay"}


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("environments", "staging", "must be a list of environment names"),
        ("environments", ["ok", ""], "must be non-empty strings"),
        ("environment_map", ["prod"], "must be an object"),
        ("send_session_id", "no", "must be true or false"),
        ("transform", {"op": "drop"}, "must be a list of operations"),
        (
            "transform",
            [{"op": "drop", "path": "input"}, {"op": "truncate", "path": "output"}],
            "operation 2 (truncate)",
        ),
        ("transform", [{"op": "explode", "path": "input"}], "operation 1 (explode): op must be one of"),
        ("transform", [{"op": "drop", "path": "secrets.key"}], "must start with one of input"),
        ("transform", [{"op": "rename", "path": "metadata.*", "to": "metadata.b"}], "must not contain *"),
        ("transform", [{"op": "set", "path": "user_id", "value": 3}], "value must be a string"),
        ("transform", [{"op": "hash", "path": "user_id", "salt": "x"}], "unknown key salt"),
        ("quota", {"over_quota": "drop"}, "give max_per_minute, max_per_day or both"),
        ("quota", {"max_per_minute": 0}, "max_per_minute must be a whole number from 1"),
        ("quota", {"max_per_minute": 5, "over_quota": "queue"}, "over_quota must be one of delay, sample, drop"),
        ("quota", {"max_per_hour": 5}, "unknown key max_per_hour"),
        ("response_validation", {"status": [500]}, "from 200 to 299"),
        ("response_validation", {"json_path": ""}, "json_path must be"),
    ],
)
def test_a_bad_setting_is_a_problem_naming_it(api, team, setting, value, message) -> None:
    errors = refused(api, webhook(**{setting: value}))

    assert list(errors) == [f"config.{setting}"]
    assert message in errors[f"config.{setting}"][0]


def test_response_validation_is_for_the_webhook_only(api, team) -> None:
    body = {
        "name": "lf",
        "platform": "langfuse",
        "config": {"publicKey": "pk", "secretKey": "sk-0123456789", "response_validation": {"json_path": "errors"}},
    }

    errors = refused(api, body)

    assert "only for webhook" in errors["config.response_validation"][0]


def test_setting_and_platform_errors_come_together(api, team) -> None:
    errors = refused(api, {"name": "hook", "platform": "webhook", "config": {"quota": {}}})

    assert set(errors) == {"config.url", "config.quota"}


# --- the transform and the shaping, on records ------------------------------------------------------


def test_paths_with_a_star_reach_every_key_and_item() -> None:
    record = make_record(metadata={"a": {"secret": "x", "keep": 1}, "b": {"secret": "y"}})
    shaping = Shaping.of(
        {
            "transform": [
                {"op": "drop", "path": "metadata.*.secret"},
                {"op": "truncate", "path": "input.messages.*.content", "max_chars": 3},
            ]
        }
    )

    shaped = shaping.shape(record)

    assert shaped.metadata == {"a": {"keep": 1}, "b": {}}
    assert [m["content"] for m in shaped.input["messages"]] == ["Be ", "Wha"]
    assert record.metadata["a"]["secret"] == "x"  # the record given is left as it was


def test_hash_is_stable_within_a_team_and_differs_between_teams() -> None:
    shaping = Shaping.of({"transform": [{"op": "hash", "path": "user_id"}]})

    one = shaping.shape(make_record(user_id="u-1", team_id=1)).user_id
    again = shaping.shape(make_record(user_id="u-1", team_id=1, trace_id="trc_other")).user_id
    other_team = shaping.shape(make_record(user_id="u-1", team_id=2)).user_id

    assert one == again != other_team
    assert len(one) == 64


def test_a_path_that_names_nothing_leaves_the_trace_alone() -> None:
    record = make_record(metadata={})
    shaping = Shaping.of({"transform": [{"op": "rename", "path": "metadata.nope", "to": "metadata.other"}]})

    assert shaping.shape(record).metadata == {}


def test_set_makes_the_objects_on_its_way_and_renames_move_values() -> None:
    shaping = Shaping.of(
        {
            "transform": [
                {"op": "set", "path": "metadata.route.source", "value": "tracerelay"},
                {"op": "rename", "path": "metadata.route", "to": "output.route"},
                {"op": "set", "path": "tags", "value": ["exported"]},
            ]
        }
    )

    shaped = shaping.shape(make_record(output={"text": "hi"}, metadata={}))

    assert shaped.metadata == {}
    assert shaped.output == {"text": "hi", "route": {"source": "tracerelay"}}
    assert shaped.tags == ("exported",)


def test_an_environment_list_refuses_other_environments() -> None:
    shaping = Shaping.of({"environments": ["staging"]})

    assert shaping.refusal(make_record(environment="staging")) is None
    assert "'production' is not among" in (shaping.refusal(make_record(environment="production")) or "")


def test_the_operation_number_is_in_the_error() -> None:
    with pytest.raises(TransformError, match=r"operation 3 \(set\): set needs a value"):
        parse_transform(
            [{"op": "drop", "path": "input"}, {"op": "hash", "path": "user_id"}, {"op": "set", "path": "metadata.x"}]
        )
