"""Backfill on the integration page in the browser: an admin starts one from the form, watches its
progress bar move while it runs (htmx polling), cancels it, starts another that completes; the
section passes axe at both widths."""

from __future__ import annotations

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from delivery import outbox
from delivery.backfill import job as backfill_job
from delivery.backfill.job import run_slice
from delivery.engine import deliver_batch
from delivery.models import Backfill, BackfillStatus
from tests.fakes import FakeWebhookReceiver

from ..factories import IntegrationFactory, MembershipFactory, TraceFactory, UserFactory
from .test_every_page import NARROW, WIDE, _violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class Died(BaseException):
    pass


@pytest.fixture
def published(monkeypatch):
    """The job's tasks and rows, captured (never sent to a broker someone else's worker reads)."""
    sent: dict[str, list] = {"jobs": [], "rows": []}
    monkeypatch.setattr(
        backfill_job, "publish_job", lambda backfill_id, countdown=None: sent["jobs"].append(backfill_id)
    )
    monkeypatch.setattr(backfill_job, "publish_rows", lambda ids: sent["rows"].append(list(ids)))
    monkeypatch.setattr(outbox, "publish", lambda ids, **kw: True)
    return sent


def deliver(published) -> None:
    while published["rows"]:
        deliver_batch(published["rows"].pop(0))


def test_start_watch_cancel_and_complete_a_backfill(page, sign_in, shoot, team, published):
    from django.utils import timezone

    admin = MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.ADMIN).user
    start = timezone.now() - timedelta(hours=3)
    for i in range(30):
        TraceFactory(team=team, timestamp=start + timedelta(minutes=i))
    with FakeWebhookReceiver() as fake:
        hook = IntegrationFactory(team=team, name="archive-hook", config={"url": fake.url + "/hook", "headers": {}})
        sign_in(page, admin)
        page.goto(f"/integrations/{hook.pk}")
        section = page.locator("#backfill")
        expect(section.get_by_role("heading", name="Backfill")).to_be_visible()
        expect(section).to_contain_text("No backfill yet")

        section.get_by_label("Traces per second").fill("10")
        section.get_by_role("button", name="Start backfill").click()
        expect(page.get_by_text("Backfill to archive-hook started")).to_be_visible()
        job = Backfill.objects.get()
        expect(page.locator(f"#backfill-{job.pk}")).to_contain_text("Pending")

        # The worker writes a first chunk of 10 and dies; the rows are delivered meanwhile.
        def die(_s: float) -> None:
            raise Died

        with pytest.raises(Died):
            run_slice(job.pk, seconds=5, sleep=die)
        deliver(published)
        row = page.locator(f"#backfill-{job.pk}")
        expect(row).to_contain_text("Running")  # polled: no reload
        expect(row).to_contain_text("33% of 30")
        shoot(page, "integration-backfill-running")

        row.get_by_role("button", name=f"Cancel backfill {job.pk}").click()
        expect(page.locator(f"#backfill-{job.pk}")).to_contain_text("Cancelled")
        job.refresh_from_db()
        assert job.status == BackfillStatus.CANCELLED and job.sent == 10

        section = page.locator("#backfill")
        section.get_by_role("button", name="Start backfill").click()
        second = Backfill.objects.exclude(pk=job.pk).get()
        while run_slice(second.pk, seconds=10, sleep=lambda _s: deliver(published)):
            pass
        expect(page.locator(f"#backfill-{second.pk}")).to_contain_text("Succeeded")
        expect(page.locator(f"#backfill-{second.pk}")).to_contain_text("100% of 30")
        assert len({t["id"] for t in fake.traces}) == 30 and len(fake.traces) == 30  # each trace once
        problems = []
        for width, height in (WIDE, NARROW):
            page.set_viewport_size({"width": width, "height": height})
            problems += [f"{width}px: {v}" for v in _violations(page)]
        page.set_viewport_size({"width": WIDE[0], "height": WIDE[1]})
        page.locator("#backfill").scroll_into_view_if_needed()
        shoot(page, "integration-backfill-done")
        assert problems == []
