"""Team roles, with the owner / member / outsider pattern."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from accounts.models import Membership, Role

from ..factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def membership(user, team) -> Membership | None:
    return Membership.objects.filter(user=user, team=team).first()


def test_the_owner_manages_and_writes(owner, team):
    m = membership(owner, team)
    assert (m.role, m.may.manage_keys, m.may.manage_members, m.may.replay_deliveries) == (Role.OWNER, True, True, True)


def test_a_member_writes_but_does_not_manage(member, team):
    m = membership(member, team)
    assert (m.role, m.may.manage_keys, m.may.replay_deliveries, m.may.read) == (Role.MEMBER, False, True, True)


def test_an_admin_manages_and_a_viewer_only_reads(team):
    admin = MembershipFactory(team=team, user=UserFactory(username="adm"), role=Role.ADMIN)
    viewer = MembershipFactory(team=team, user=UserFactory(username="viewer"), role=Role.VIEWER)
    assert (admin.may.manage_keys, admin.may.manage_rules, admin.may.manage_members) == (True, True, False)
    assert (viewer.may.read, viewer.may.send_test_traces, viewer.may.manage_keys) == (True, False, False)


def test_an_outsider_has_no_place_in_the_team(outsider, team, other_team):
    assert membership(outsider, team) is None
    assert membership(outsider, other_team).role == Role.OWNER


def test_a_user_joins_a_team_once(member, team):
    with pytest.raises(IntegrityError), transaction.atomic():
        MembershipFactory(team=team, user=member, role=Role.VIEWER)
