"""/routing: a rule dragged to another place posts that place (``position``) to the move endpoint the
up/down buttons use (routing.edits.rule_move, the API's serializer and service), checked against the
version the list was rendered with; admins and owners only, another team's rule is a 404."""

from __future__ import annotations

import pytest

from routing import edits, selectors
from routing.models import RoutingRule

from ..factories import IntegrationFactory
from .conftest import ROLES

pytestmark = pytest.mark.django_db


@pytest.fixture
def rules(team):
    IntegrationFactory(team=team, name="lf-prod", platform="langfuse", config={})
    version = 0
    for i, name in enumerate(["errors", "expensive", "sampled"]):
        rule = {"name": name, "priority": (i + 1) * 10, "destinations": ["lf-prod"]}
        header, _ = edits.rule_save(team_id=team.pk, rule=rule, rule_id=None, version=version, actor="test")
        version = header.version
    return {r.name: r for r in RoutingRule.objects.filter(team=team)}


def _version(team) -> int:
    return selectors.rule_set(team.pk).version


def _order(team) -> list[tuple[str, int]]:
    return [(r.name, r.priority) for r in selectors.routing_rules(team.pk)]


BEFORE = [("errors", 10), ("expensive", 20), ("sampled", 30)]


@pytest.mark.parametrize("role", [*ROLES, "outsider"])
def test_a_drop_moves_the_rule_to_its_place_for_admins_and_owners_only(as_role, role, team, rules):
    response = as_role(role).post(
        f"/routing/rules/{rules['sampled'].pk}/move",
        {"position": "1", "version": _version(team)},
        HTTP_HX_REQUEST="true",
    )
    expected = {"owner": 200, "admin": 200, "member": 403, "viewer": 403, "outsider": 404}[role]
    assert response.status_code == expected
    if expected != 200:
        assert _order(team) == BEFORE
        return
    text = response.content.decode()
    assert "<html" not in text and 'id="rule-list"' in text
    # The priority numbers stay where they were; the rules take them in their new order.
    assert _order(team) == [("sampled", 10), ("errors", 20), ("expensive", 30)]
    assert text.index('id="rule-' + str(rules["sampled"].pk) + '"') < text.index('id="rule-' + str(rules["errors"].pk))


def test_a_drop_without_htmx_redirects_to_the_rule(as_role, team, rules):
    rule = rules["errors"]
    response = as_role("admin").post(f"/routing/rules/{rule.pk}/move", {"position": "3", "version": _version(team)})
    assert response.status_code == 302 and response["Location"] == f"/routing#rule-{rule.pk}"
    assert _order(team) == [("expensive", 10), ("sampled", 20), ("errors", 30)]


def test_the_drag_handle_and_the_arrows_show_for_admins_only(as_role, rules):
    for role in ROLES:
        text = as_role(role).get("/routing").content.decode()
        manage = role in ("owner", "admin")
        assert ("data-drag-handle" in text) == manage and ("data-sortable" in text) == manage
        assert ('aria-label="Move errors down"' in text) == manage  # the keyboard's way stays
        assert "dashboard/routing.js" in text


@pytest.mark.parametrize(
    "position, message",
    [
        ("4", "Choose a place from 1 to 3, not 4."),
        ("0", "Choose a place from 1 to 3, not 0."),
        ("first", "A place in the list is a whole number, not &#x27;first&#x27;."),
        ("", "A place in the list is a whole number, not &#x27;&#x27;."),
    ],
)
def test_a_place_outside_the_list_is_refused_and_says_why(as_role, team, rules, position, message):
    before = _version(team)
    response = as_role("admin").post(
        f"/routing/rules/{rules['errors'].pk}/move",
        {"position": position, "version": before},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert "Could not move &#x27;errors&#x27;" in text and message in text
    assert _version(team) == before and _order(team) == BEFORE


def test_a_drop_on_a_list_someone_else_reordered_first_changes_nothing_and_says_so(as_role, team, rules):
    opened = _version(team)
    edits.rule_move(team_id=team.pk, rule_id=rules["errors"].pk, by=1, version=opened, actor="user:bob@example.com")
    theirs = _order(team)
    response = as_role("admin").post(
        f"/routing/rules/{rules['sampled'].pk}/move",
        {"position": "1", "version": opened},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 409
    text = response.content.decode()
    assert "changed by someone else since you opened this page" in text and "user:bob@example.com" in text
    assert "your request to move &#x27;sampled&#x27; to place 1 was not applied" in text
    assert _order(team) == theirs == [("expensive", 10), ("errors", 20), ("sampled", 30)]
    # Their list, with its current version, is what the page shows now: the same drop goes through.
    assert f'name="version" value="{_version(team)}"' in text
    response = as_role("admin").post(
        f"/routing/rules/{rules['sampled'].pk}/move", {"position": "1", "version": _version(team)}
    )
    assert response.status_code == 302
    assert [name for name, _ in _order(team)] == ["sampled", "expensive", "errors"]
