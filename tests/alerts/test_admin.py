"""The Django admin's alert form: webhook URLs pass the same URL guard as the API and the dashboard."""

from __future__ import annotations

import json

import pytest

from alerts.models import Alert
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, db):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


def _form(team, webhooks) -> dict:
    return {
        "team": team.pk,
        "name": "budget",
        "metric": "cost",
        "threshold": "1",
        "window_type": "rolling",
        "window_minutes": "60",
        "period": "",
        "scope": "{}",
        "emails": "[]",
        "webhooks": json.dumps(webhooks),
        "enabled": "on",
        "created_at_0": "2026-01-01",
        "created_at_1": "00:00:00",
        "updated_at_0": "2026-01-01",
        "updated_at_1": "00:00:00",
    }


def test_the_signing_secret_is_not_on_the_form(admin_client):
    page = admin_client.get("/admin/alerts/alert/add/").content.decode()
    assert 'name="webhooks"' in page and "signing_secret" not in page


def test_a_numeric_metadata_address_is_refused(admin_client, team):
    response = admin_client.post("/admin/alerts/alert/add/", _form(team, [{"url": "http://0xa9fea9fe/"}]))

    assert response.status_code == 200  # the form again, with the error
    assert "This URL may not be used: 0xa9fea9fe (= 169.254.169.254) is a cloud metadata address." in (
        response.content.decode()
    )
    assert not Alert.objects.exists()


def test_a_badly_shaped_list_is_refused_and_a_good_one_saved(admin_client, team):
    bad = admin_client.post("/admin/alerts/alert/add/", _form(team, ["https://hooks.example.com/x"]))
    assert "A list of objects like" in bad.content.decode()

    good = admin_client.post("/admin/alerts/alert/add/", _form(team, [{"url": "https://hooks.example.com/x"}]))
    assert good.status_code == 302, good.content.decode()[:2000]
    assert Alert.objects.get().webhooks == [{"url": "https://hooks.example.com/x"}]
