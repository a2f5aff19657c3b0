from __future__ import annotations

import pytest

from ..factories import PlantFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def plants(team, other_team):
    mine = [
        PlantFactory(team=team, name=n, tag=t) for n, t in [("fern", "green"), ("cactus", "desert"), ("ivy", "green")]
    ]
    PlantFactory(team=other_team, name="theirs", tag="secret")
    return mine


def test_it_lists_the_callers_plants_as_name_and_tag(api, plants):
    r = api.get("/plants")
    assert r.status_code == 200 and r["Content-Type"] == "application/json"
    assert r.json() == [
        {"name": "fern", "tag": "green"},
        {"name": "cactus", "tag": "desert"},
        {"name": "ivy", "tag": "green"},
    ]


def test_limit_caps_the_results(api, plants):
    assert [p["name"] for p in api.get("/plants", {"limit": 2}).json()] == ["fern", "cactus"]
    assert len(api.get("/plants", {"limit": 100}).json()) == 3
    assert len(api.get("/plants", {"limit": "9" * 30}).json()) == 3


@pytest.mark.parametrize("limit", ["0", "-1", "two", "1.5", "", "1e3", "0x10", "٣"])
def test_a_limit_that_is_not_a_positive_integer_is_a_400(api, plants, limit):
    r = api.get("/plants", {"limit": limit})
    assert r.status_code == 400 and r["Content-Type"] == "application/problem+json"
    assert r.json()["parameter"] == "limit"


def test_every_key_environment_may_read_its_plants(dev_api, ci_api, plants):
    assert len(dev_api.get("/plants").json()) == 3
    assert len(ci_api.get("/plants").json()) == 3


def test_another_teams_key_sees_only_its_own(other_api, plants):
    assert other_api.get("/plants").json() == [{"name": "theirs", "tag": "secret"}]


def test_no_key_no_plants(anon_api, plants):
    assert anon_api.get("/plants").status_code == 401
