from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from accounts.models import ApiKey, Membership, Team
from accounts.selectors import principal_for_key
from traces.models import Plant

pytestmark = pytest.mark.django_db


def bootstrap() -> str:
    out = StringIO()
    call_command("bootstrap", "--url", "http://127.0.0.1:9999", stdout=out)
    return out.getvalue()


def test_the_first_start_makes_a_demo_team_admin_key_and_plants(monkeypatch):
    monkeypatch.setenv("TRACERELAY_ADMIN_PASSWORD", "s3cret-pass")
    output = bootstrap()
    team = Team.objects.get(name="demo")
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.check_password("s3cret-pass")
    assert Membership.objects.get(user=admin, team=team).role == "owner"
    assert Plant.objects.filter(team=team).count() >= 3
    raw = re.search(r"tr_prod_[0-9A-Za-z]{36}", output).group(0)
    assert principal_for_key(raw).team_id == team.id
    assert "http://127.0.0.1:9999/admin/" in output and "admin / s3cret-pass" in output
    assert f"Bearer {raw}" in output


def test_a_second_start_makes_nothing_new_and_says_how_to_make_a_key():
    bootstrap()
    output = bootstrap()
    assert ApiKey.objects.count() == 1 and Team.objects.count() == 1 and Plant.objects.count() == 4
    assert "tr_prod_" not in output
    assert "manage.py apikey create --team demo --environment production" in output
    assert "changepassword admin" in output


def test_json_says_what_the_first_start_made_and_nothing_secret_later(monkeypatch):
    import json

    monkeypatch.setenv("TRACERELAY_ADMIN_PASSWORD", "s3cret-pass")
    out = StringIO()
    call_command("bootstrap", "--url", "http://h:1", "--json", stdout=out)
    first = json.loads(out.getvalue())
    assert first["url"] == "http://h:1" and first["first_start"] is True
    assert (first["username"], first["email"], first["password"]) == ("admin", "admin@localhost", "s3cret-pass")
    assert principal_for_key(first["key"]).team_id == Team.objects.get(name="demo").id
    out = StringIO()
    call_command("bootstrap", "--json", stdout=out)
    again = json.loads(out.getvalue())
    assert again["first_start"] is False and again["password"] is None and again["key"] is None
    assert again["active_keys"] == 1 and again["email"] == "admin@localhost"
