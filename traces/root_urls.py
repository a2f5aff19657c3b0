"""Paths at the server root: the interface spec's sample endpoint and the traces' dashboard pages."""

from django.urls import path

from . import api
from .views import detail, feed, groups, home_key_create

urlpatterns = [
    path("plants", api.PlantList.as_view(), name="plants"),
    path("start/key", home_key_create, name="home-key-create"),
    path("traces", feed.trace_feed, name="trace-feed"),
    path("traces/live", feed.trace_feed_live, name="trace-feed-live"),
    path("traces/columns", feed.trace_feed_columns, name="trace-feed-columns"),
    path("traces/<str:trace_id>", detail.trace_detail, name="trace-detail"),
    path(
        "traces/<str:trace_id>/deliveries/<int:delivery_id>/retry", detail.delivery_retry, name="trace-delivery-retry"
    ),
    path("sessions", groups.sessions, name="trace-sessions"),
    path("sessions/<path:session_id>", groups.session_detail, name="trace-session"),
    path("users", groups.users, name="trace-users"),
]
