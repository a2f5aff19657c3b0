"""The integration page's Backfill section: admins start a job from the form (bad input named at its
field), everyone sees the jobs with their progress (polled while one runs), admins cancel."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from delivery.backfill import job as backfill_job
from delivery.models import Backfill, BackfillStatus

from .integrations_setup import MANAGERS, NOT_MANAGERS, make_hook

pytestmark = pytest.mark.django_db


@pytest.fixture
def hook(team):
    return make_hook(team)


@pytest.fixture(autouse=True)
def published(monkeypatch):
    jobs: list[int] = []
    monkeypatch.setattr(backfill_job, "publish_job", lambda backfill_id, countdown=None: jobs.append(backfill_id))
    return jobs


def form(**extra):
    now = timezone.now().replace(tzinfo=None)
    return {
        "since": (now - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M"),
        "until": now.strftime("%Y-%m-%dT%H:%M"),
        "max_per_second": "50",
        "model": "gpt-4o*",
        "status": "",
        "environment": "",
        "tag": "",
        **extra,
    }


@pytest.mark.parametrize("role", MANAGERS)
def test_managers_start_a_backfill_from_the_form(as_role, role, hook):
    client = as_role(role)
    page = client.get(f"/integrations/{hook.pk}").content.decode()
    assert 'id="backfill"' in page and "Start backfill" in page

    response = client.post(f"/integrations/{hook.pk}/backfill", form(apply_rules="on"))

    assert response.status_code == 302 and response["Location"].endswith("#backfill")
    job = Backfill.objects.get()
    assert job.apply_rules is True and job.filters == {"model": "gpt-4o*"} and job.max_per_second == 50
    assert job.since.tzinfo is not None and job.created_by.startswith("user:")
    page = client.get(f"/integrations/{hook.pk}").content.decode()
    assert f'id="backfill-{job.pk}"' in page and 'hx-trigger="every 2s"' in page  # polled while pending


def test_bad_input_is_named_at_its_field(as_role, hook):
    client = as_role("admin")
    response = client.post(f"/integrations/{hook.pk}/backfill", form(since="", max_per_second="0"))
    assert response.status_code == 400
    assert response.context["backfill_form"].errors.keys() == {"since", "max_per_second"}
    response = client.post(f"/integrations/{hook.pk}/backfill", form(status="bogus"))
    assert response.status_code == 400 and "status" in response.context["backfill_form"].errors
    assert not Backfill.objects.exists()


def running_job(hook, **fields) -> Backfill:
    """A backfill of ``hook`` running over the last day."""
    now = timezone.now()
    return Backfill.objects.create(
        team_id=hook.team_id,
        integration=hook,
        since=now - timedelta(days=1),
        until=now,
        max_per_second=10,
        status=BackfillStatus.RUNNING,
        **fields,
    )


@pytest.mark.parametrize("role", NOT_MANAGERS)
def test_others_see_the_jobs_but_cannot_start_or_cancel(as_role, role, hook):
    job = running_job(hook, total=40, skipped=20)
    client = as_role(role)
    page = client.get(f"/integrations/{hook.pk}").content.decode()
    assert 'value="50"' in page and "Start backfill" not in page  # 20 of 40 done (skipped)
    assert client.post(f"/integrations/{hook.pk}/backfill", form()).status_code == 403
    assert client.post(f"/integrations/{hook.pk}/backfills/{job.pk}/cancel").status_code == 403
    partial = client.get(f"/integrations/{hook.pk}/backfills", HTTP_HX_REQUEST="true")
    assert partial.status_code == 200 and f'id="backfill-{job.pk}"' in partial.content.decode()


def test_an_admin_cancels_a_running_job_and_polling_stops(as_role, hook):
    job = running_job(hook)
    client = as_role("admin")
    response = client.post(f"/integrations/{hook.pk}/backfills/{job.pk}/cancel")
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == BackfillStatus.CANCELLED
    partial = client.get(f"/integrations/{hook.pk}/backfills", HTTP_HX_REQUEST="true").content.decode()
    assert "Cancelled" in partial and "every 2s" not in partial
    client.post(f"/integrations/{hook.pk}/backfills/{job.pk}/cancel")  # again: a message, no change
    assert client.post(f"/integrations/{hook.pk}/backfills/999999/cancel").status_code == 404


def test_another_teams_integration_is_a_404(as_role, other_team):
    theirs = make_hook(other_team)
    client = as_role("admin")
    assert client.post(f"/integrations/{theirs.pk}/backfill", form()).status_code == 404
    assert client.get(f"/integrations/{theirs.pk}/backfills", HTTP_HX_REQUEST="true").status_code == 404


def test_the_jobs_partial_visited_directly_goes_to_the_page(as_role, hook):
    response = as_role("viewer").get(f"/integrations/{hook.pk}/backfills")
    assert response.status_code == 302 and response["Location"] == f"/integrations/{hook.pk}#backfill"
