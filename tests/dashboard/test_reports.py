"""/reports pages: every role reads and downloads, members run, admins and owners create, change
and delete; outsiders get 404; bad input shows next to the field and saves nothing."""

from __future__ import annotations

import pytest
from django_celery_beat.models import PeriodicTask

from reports import services
from reports.definition import parse_definition
from reports.models import Report, ReportRun

from ..factories import MembershipFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db

GOOD = {
    "name": "Weekly cost",
    "time_range": "7d",
    "group_by": "model",
    "interval": "day",
    "status": ["error", "rate_limited"],
    "environment": "production",
    "other_filters": "cost_min=0.01",
    "formats": ["csv", "pdf"],
    "recipients": "a@example.com,\nb@example.com",
    "schedule": "0 8 * * 1",
}


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    monkeypatch.setattr(services.app, "send_task", lambda *a, **k: None)


@pytest.fixture
def team():
    return TeamFactory(name="acme")


def login(client, team, role):
    user = UserFactory()
    MembershipFactory(user=user, team=team, role=role)
    client.force_login(user)
    return user


@pytest.fixture
def report(team):
    d = parse_definition({"name": "Daily", "time_range": "24h", "formats": ["csv"]})
    return services.report_create(team_id=team.id, definition=d, actor="test")


@pytest.fixture
def done_run(report):
    run = services.run_request(report=report)
    services.run_execute(run_id=run.pk, final=True)
    return run


def test_an_admin_creates_a_report(client, team):
    login(client, team, "admin")
    r = client.post("/reports/new", GOOD)
    report = Report.objects.get(team=team)
    assert r.status_code == 302 and r["Location"] == f"/reports/{report.pk}"
    assert report.filters == {"environment": "production", "status": "error,rate_limited", "cost_min": "0.01"}
    assert report.recipients == ["a@example.com", "b@example.com"] and report.group_by == "model"
    assert PeriodicTask.objects.filter(pk=report.periodic_task_id).exists()
    page = client.get(f"/reports/{report.pk}").content.decode()
    assert "Weekly cost" in page and "0 8 * * 1" in page and "Run now" in page


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"name": ""}, "name", "required"),
        ({"schedule": "61 * * * *"}, "schedule", "crontab"),
        ({"recipients": "nope"}, "recipients", "Not an email address"),
        ({"formats": []}, "formats", "csv and pdf"),
        ({"other_filters": "colour=red"}, "other_filters", "colour: Unknown filter"),
        ({"status": ["sideways"]}, "status", "valid choice"),
        ({"interval": "minute", "time_range": "30d"}, "interval", "points"),
        ({"time_range": "fixed", "schedule": ""}, "since", "both since and until"),
        ({"model": "x" * 300}, "model", ""),
    ],
)
def test_bad_input_shows_next_to_the_field(client, team, changes, field, message):
    login(client, team, "owner")
    r = client.post("/reports/new", {**GOOD, **changes})
    assert r.status_code == 400
    form = r.context["form"]
    assert field in form.errors, form.errors
    assert message in " ".join(form.errors[field])
    assert not Report.objects.exists()


@pytest.mark.parametrize(
    ("choice", "crontab", "words"),
    [
        ({"schedule_kind": "daily", "schedule_time": "06:00"}, "0 6 * * *", "Daily at 06:00 UTC"),
        (
            {"schedule_kind": "weekly", "schedule_time": "8:30", "schedule_weekday": "1"},
            "30 8 * * 1",
            "Mondays at 08:30 UTC",
        ),
        (
            {"schedule_kind": "monthly", "schedule_time": "23:59", "schedule_day": "28"},
            "59 23 28 * *",
            "Monthly on day 28 at 23:59 UTC",
        ),
        ({"schedule_kind": "custom", "schedule": "0 */6 * * *"}, "0 */6 * * *", "custom: 0 */6 * * *"),
        ({"schedule_kind": ""}, "", "by hand"),
    ],
)
def test_a_schedule_is_chosen_as_daily_weekly_monthly_or_custom(client, team, choice, crontab, words):
    login(client, team, "admin")
    r = client.post("/reports/new", {**GOOD, "schedule": "", **choice})
    assert r.status_code == 302, r.context["form"].errors
    report = Report.objects.get(team=team)
    assert report.schedule == crontab
    assert bool(report.periodic_task_id) == bool(crontab)  # django-celery-beat runs it
    assert words in client.get(f"/reports/{report.pk}").content.decode()
    form = client.get(f"/reports/{report.pk}/edit").context["form"]
    assert form.initial["schedule_kind"] == (choice["schedule_kind"])  # shown as it was chosen
    if "schedule_time" in choice:
        assert form.initial["schedule_time"] == choice["schedule_time"].zfill(5)  # "8:30" → "08:30"


@pytest.mark.parametrize(
    ("choice", "field"),
    [
        ({"schedule_kind": "daily", "schedule_time": "25:00"}, "schedule_time"),
        ({"schedule_kind": "weekly", "schedule_time": ""}, "schedule_time"),
        ({"schedule_kind": "weekly", "schedule_time": "08:00", "schedule_weekday": "9"}, "schedule_weekday"),
        ({"schedule_kind": "monthly", "schedule_time": "08:00", "schedule_day": "31"}, "schedule_day"),
        ({"schedule_kind": "custom", "schedule": ""}, "schedule"),
        ({"schedule_kind": "hourly"}, "schedule_kind"),
    ],
)
def test_a_bad_schedule_choice_shows_next_to_its_field(client, team, choice, field):
    login(client, team, "admin")
    r = client.post("/reports/new", {**GOOD, "schedule": "", **choice})
    assert r.status_code == 400 and field in r.context["form"].errors, r.context["form"].errors
    assert not Report.objects.exists()


def test_the_form_saves_leave_out_groups_with_no_traffic(client, team):
    login(client, team, "admin")
    client.post("/reports/new", {**GOOD, "skip_empty_groups": "on"})
    report = Report.objects.get(team=team)
    assert report.skip_empty_groups is True
    assert client.get(f"/reports/{report.pk}/edit").context["form"].initial["skip_empty_groups"] is True


def test_edit_keeps_what_it_shows(client, team, report):
    login(client, team, "admin")
    page = client.get(f"/reports/{report.pk}/edit")
    assert page.status_code == 200 and page.context["form"].initial["name"] == "Daily"
    r = client.post(f"/reports/{report.pk}/edit", {**GOOD, "name": "Renamed", "schedule": ""})
    assert r.status_code == 302
    report.refresh_from_db()
    assert report.name == "Renamed" and report.schedule == "" and report.periodic_task_id is None


def test_a_period_set_through_the_api_shows_on_the_form(client, team):
    login(client, team, "admin")
    d = parse_definition({"name": "Monthly", "time_range": "4w", "formats": ["pdf"]})
    report = services.report_create(team_id=team.id, definition=d, actor="api")
    page = client.get(f"/reports/{report.pk}/edit").content.decode()
    assert '<option value="4w" selected>Last 4w</option>' in page


def test_members_run_and_everyone_downloads(client, team, report, done_run):
    login(client, team, "viewer")
    assert client.get("/reports").status_code == 200
    page = client.get(f"/reports/{report.pk}").content.decode()
    assert "Run now" not in page and "Edit" not in page
    download = client.get(f"/reports/{report.pk}/runs/{done_run.pk}/csv")
    assert download.status_code == 200 and download["Content-Type"] == "text/csv"
    assert client.get(f"/reports/{report.pk}/runs/{done_run.pk}/pdf").status_code == 404  # not asked for
    assert client.post(f"/reports/{report.pk}/run").status_code == 403
    client.logout()
    login(client, team, "member")
    assert client.post(f"/reports/{report.pk}/run").status_code == 302
    assert ReportRun.objects.filter(report=report).count() == 2
    assert client.get("/reports/new").status_code == 403
    assert client.post(f"/reports/{report.pk}/delete").status_code == 403
    assert client.post(f"/reports/{report.pk}/edit", GOOD).status_code == 403


def test_run_now_with_htmx_returns_the_runs_that_poll(client, team, report):
    login(client, team, "member")
    r = client.post(f"/reports/{report.pk}/run", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="runs")
    html = r.content.decode()
    assert r.status_code == 200 and 'id="runs"' in html and 'hx-trigger="every 2s"' in html and "Pending" in html
    assert "<html" not in html


def test_delete(client, team, report):
    login(client, team, "owner")
    assert client.post(f"/reports/{report.pk}/delete").status_code == 302
    assert not Report.objects.exists()


def test_outsiders_get_404(client, report, done_run):
    login(client, TeamFactory(name="others"), "owner")
    assert client.get("/reports").status_code == 200
    assert "Daily" not in client.get("/reports").content.decode()
    for url in (f"/reports/{report.pk}", f"/reports/{report.pk}/edit", f"/reports/{report.pk}/runs/{done_run.pk}/csv"):
        assert client.get(url).status_code == 404, url
    for url in (f"/reports/{report.pk}/run", f"/reports/{report.pk}/delete"):
        assert client.post(url).status_code == 404, url


def test_anonymous_visitors_are_sent_to_log_in(client, report):
    r = client.get("/reports")
    assert r.status_code == 302 and r["Location"].startswith("/login")


@pytest.mark.parametrize(
    ("backend", "shown"),
    [
        ("console", "Not emailed: no mail server is configured (EMAIL_URL); written to the log"),
        ("dummy", "Not emailed: mail is switched off (EMAIL_URL); nothing was sent"),
        ("locmem", "Emailed to cfo@example.com"),  # a backend that delivers (SMTP in production)
    ],
)
def test_a_run_says_whether_its_mail_reached_anyone(client, team, settings, backend, shown):
    settings.EMAIL_BACKEND = f"django.core.mail.backends.{backend}.EmailBackend"
    d = parse_definition({"name": "Mailed", "time_range": "24h", "formats": ["csv"], "recipients": ["cfo@example.com"]})
    report = services.report_create(team_id=team.id, definition=d, actor="test")
    services.run_execute(run_id=services.run_request(report=report).pk, final=True)
    login(client, team, "viewer")
    page = client.get(f"/reports/{report.pk}").content.decode()
    assert f'<div class="sub">{shown}</div>' in page  # the run
    assert ("Emailed to" in page) == (backend == "locmem")
    # and beside the recipients, before any run
    assert ('cfo@example.com<div class="sub">Not emailed: ' in page) == (backend != "locmem")


@pytest.mark.parametrize("path", ["/reports/new", "/traces", "/analytics"])
def test_example_dates_are_placeholders_not_values(client, team, path):
    login(client, team, "owner")
    text = client.get(path).content.decode()
    for name in ("since", "until"):
        tag = text[text.index(f'name="{name}"') :].split(">", 1)[0]
        assert 'placeholder="e.g. 20' in tag and "value=" not in tag, tag
