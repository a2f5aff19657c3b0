"""The saved-filter fields reports and dashboard widgets share (traces.views.saved_filter): the fold
into the API's filter, the API's errors back at their fields, and the initial values of a stored one."""

from __future__ import annotations

from dashboards.forms import WidgetForm, widget_initial
from reports.forms import ReportForm
from traces.views.saved_filter import saved_filter_initial

FILTERS = {
    "model": " gpt-4o* ",
    "provider": "",
    "environment": "production",
    "tag": "",
    "user_id": "u-1",
    "status": ["error", "rate_limited"],
    "other_filters": "cost_min=0.01&metadata.customer=&model=ignored",
}


def _bound(form_class, **extra):
    form = form_class({**FILTERS, **extra})
    form.is_valid()
    return form


def test_the_fields_fold_into_one_filter_named_fields_over_the_query_string():
    widget = _bound(WidgetForm).filters_data()
    assert widget == {
        "cost_min": "0.01",
        "metadata.customer": "",  # a widget keeps blank values
        "model": "gpt-4o*",
        "environment": "production",
        "status": "error,rate_limited",
    }
    report = _bound(ReportForm).filters_data()
    assert report == {  # a report drops blanks and has a user field
        "cost_min": "0.01",
        "model": "gpt-4o*",
        "environment": "production",
        "user_id": "u-1",
        "status": "error,rate_limited",
    }


def test_the_apis_errors_land_next_to_their_fields():
    for form_class in (WidgetForm, ReportForm):
        form = _bound(form_class)
        form.add_api_errors(
            {
                "filters.model": ["Bad model."],
                "filters.cost_min": ["Must be a number."],
                "filters": ["Not an object."],
                "no_such_field": ["Whole form."],
            }
        )
        assert form.errors["model"] == ["Bad model."]
        assert form.errors["other_filters"] == ["cost_min: Must be a number.", "Not an object."]
        assert form.non_field_errors() == ["Whole form."]
    report = _bound(ReportForm)
    report.add_api_errors({"filters.user_id": ["Too long."], "schedule": ["Not a crontab."]})
    assert report.errors["user_id"] == ["Too long."]
    assert report.errors["schedule_time"] == ["Not a crontab."]  # no custom schedule chosen


def test_a_stored_filter_gives_the_initial_values_back():
    stored = {"model": "gpt-4o", "user_id": "u-1", "status": "error", "cost_min": "0.01"}
    assert saved_filter_initial(stored) == {
        "model": "gpt-4o",
        "provider": "",
        "environment": "",
        "tag": "",
        "status": ["error"],
        "other_filters": "user_id=u-1&cost_min=0.01",  # no user field on a widget
    }
    assert saved_filter_initial(stored, ("model", "provider", "environment", "tag", "user_id"))["user_id"] == "u-1"
    initial = widget_initial({"title": "t", "metric": "cost", "chart": "line", "filters": {"error": True, "tag": "a"}})
    assert (initial["tag"], initial["other_filters"]) == ("a", "error=true")
