"""/settings/prices/reprice: every role reads the jobs; admins and owners start one; bad input shows
next to its field and starts nothing; the list is a partial htmx polls while a job is open."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from repricing import services
from repricing.definition import JobSpec
from repricing.models import JobStatus, RepriceJob

from ..factories import MembershipFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db
URL = "/settings/prices/reprice"
GOOD = {"since": "2026-11-01T00:00", "until": "2026-11-08T00:00", "model": "gpt-4o*"}


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    monkeypatch.setattr(services, "dispatch", lambda job_id: None)


@pytest.fixture
def team():
    return TeamFactory(name="acme")


def login(client, team, role):
    user = UserFactory(username=f"{role}@example.com")
    MembershipFactory(user=user, team=team, role=role)
    client.force_login(user)


def test_an_admin_starts_a_job(client, team):
    login(client, team, "admin")
    r = client.post(URL, {**GOOD, "redeliver": "on"})
    assert r.status_code == 302 and r["Location"] == URL
    job = RepriceJob.objects.get(team=team)
    assert (job.since, job.until) == (datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 8, tzinfo=UTC))
    assert job.model == "gpt-4o*" and job.redeliver and job.actor == "user:admin@example.com"
    page = client.get(URL).content.decode()
    assert f"Re-pricing job {job.pk} queued." in page and 'hx-trigger="every 2s"' in page


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({**GOOD, "until": "2026-10-01T00:00"}, "until"),
        ({**GOOD, "since": "soon"}, "since"),
        ({**GOOD, "model": "g*pt"}, "model"),
        ({"model": "x"}, "since"),
    ],
)
def test_bad_input_shows_next_to_its_field(client, team, data, field):
    login(client, team, "owner")
    r = client.post(URL, data)
    assert r.status_code == 400
    assert r.context["form"].errors[field]
    assert not RepriceJob.objects.exists()


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_other_roles_read_only(client, team, role):
    login(client, team, role)
    services.job_create(
        team_id=team.id,
        spec=JobSpec(since=datetime(2026, 11, 1, tzinfo=UTC), until=datetime(2026, 11, 2, tzinfo=UTC)),
        actor="t",
    )
    r = client.get(URL)
    assert r.status_code == 200
    body = r.content.decode()
    assert "admins and owners start them" in body and 'name="since"' not in body
    assert client.post(URL, GOOD).status_code == 403
    assert RepriceJob.objects.count() == 1


def test_the_list_polls_while_a_job_is_open_and_stops_after(client, team):
    login(client, team, "owner")
    job = services.job_create(
        team_id=team.id,
        spec=JobSpec(since=datetime(2026, 11, 1, tzinfo=UTC), until=datetime(2026, 11, 2, tzinfo=UTC)),
        actor="t",
    )
    partial = client.get(URL, headers={"HX-Request": "true"})
    assert partial.status_code == 200
    text = partial.content.decode()
    assert text.lstrip().startswith('<div id="reprice-jobs"') and "every 2s" in text and "<html" not in text
    services.job_run(job_id=job.pk)
    assert RepriceJob.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED
    text = client.get(URL, headers={"HX-Request": "true"}).content.decode()
    assert "hx-trigger" not in text and "succeeded" in text


def test_an_outsider_sees_nothing_of_the_team(client, team):
    services.job_create(
        team_id=team.id,
        spec=JobSpec(since=datetime(2026, 11, 1, tzinfo=UTC), until=datetime(2026, 11, 2, tzinfo=UTC)),
        actor="t",
    )
    login(client, TeamFactory(name="other"), "owner")
    body = client.get(URL).content.decode()
    assert "No re-pricing jobs yet" in body and "reprice-job-" not in body


def test_the_admin_lists_jobs_read_only(admin_client, team):
    job = services.job_create(
        team_id=team.id,
        spec=JobSpec(since=datetime(2026, 11, 1, tzinfo=UTC), until=datetime(2026, 11, 2, tzinfo=UTC), model="gpt*"),
        actor="t",
    )
    listing = admin_client.get("/admin/repricing/repricejob/")
    assert listing.status_code == 200 and "gpt*" in listing.content.decode()
    detail = admin_client.get(f"/admin/repricing/repricejob/{job.pk}/change/")
    assert detail.status_code == 200 and 'name="_save"' not in detail.content.decode()
    assert admin_client.get("/admin/repricing/repricejob/add/").status_code == 403
