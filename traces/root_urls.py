"""Paths at the server root: the interface spec's sample endpoint and the traces' dashboard pages."""

from django.urls import path

from . import api
from .prices import views as prices
from .views import detail, export, feed, feedback, groups, home_key_create, public, runs

urlpatterns = [
    path("plants", api.PlantList.as_view(), name="plants"),
    path("start/key", home_key_create, name="home-key-create"),
    path("traces", feed.trace_feed, name="trace-feed"),
    path("traces/live", feed.trace_feed_live, name="trace-feed-live"),
    path("traces/columns", feed.trace_feed_columns, name="trace-feed-columns"),
    path("traces/export", export.trace_export, name="trace-export"),
    path("traces/<str:trace_id>", detail.trace_detail, name="trace-detail"),
    path(
        "traces/<str:trace_id>/deliveries/<int:delivery_id>/retry", detail.delivery_retry, name="trace-delivery-retry"
    ),
    path("runs", runs.runs, name="run-list"),
    # A run id is the client's (up to 128 characters, "/" allowed): the page's own paths match first.
    path("runs/<path:run_id>/spans.json", runs.run_spans_json, name="run-spans"),
    path("runs/<path:run_id>/spans/<str:span_id>", runs.run_span, name="run-span"),
    path("runs/<path:run_id>", runs.run_page, name="run-detail"),
    path("traces/<str:trace_id>/thumbs", feedback.trace_thumbs, name="trace-thumbs"),
    path("traces/<str:trace_id>/share", feedback.trace_share, name="trace-share"),
    path("traces/<str:trace_id>/share/<int:link_id>/revoke", feedback.trace_share_revoke, name="trace-share-revoke"),
    path("share/<str:token>", public.shared_trace_page, name="trace-shared"),
    path("sessions", groups.sessions, name="trace-sessions"),
    path("sessions/<path:session_id>", groups.session_detail, name="trace-session"),
    path("users", groups.users, name="trace-users"),
    path("settings/prices", prices.prices_page, name="settings-prices"),
    path("settings/prices/new", prices.price_add, name="settings-price-add"),
    path("settings/prices/<int:price_id>/edit", prices.price_edit, name="settings-price-edit"),
    path("settings/prices/<int:price_id>/delete", prices.price_delete, name="settings-price-delete"),
]
