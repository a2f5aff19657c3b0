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
    assert (m.role, m.can_manage, m.can_write) == (Role.OWNER, True, True)


def test_a_member_writes_but_does_not_manage(member, team):
    m = membership(member, team)
    assert (m.role, m.can_manage, m.can_write) == (Role.MEMBER, False, True)


def test_an_admin_manages_and_a_viewer_only_reads(team):
    admin = MembershipFactory(team=team, user=UserFactory(username="adm"), role=Role.ADMIN)
    viewer = MembershipFactory(team=team, user=UserFactory(username="viewer"), role=Role.VIEWER)
    assert (admin.can_manage, admin.can_write) == (True, True)
    assert (viewer.can_manage, viewer.can_write) == (False, False)


def test_an_outsider_has_no_place_in_the_team(outsider, team, other_team):
    assert membership(outsider, team) is None
    assert membership(outsider, other_team).role == Role.OWNER


def test_a_user_joins_a_team_once(member, team):
    with pytest.raises(IntegrityError), transaction.atomic():
        MembershipFactory(team=team, user=member, role=Role.VIEWER)
