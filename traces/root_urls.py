"""Paths at the server root: the interface spec's sample endpoint and the traces' dashboard pages."""

from django.urls import path

from . import api
from .views import detail, feed, feedback, groups, public

urlpatterns = [
    path("plants", api.PlantList.as_view(), name="plants"),
    path("traces", feed.trace_feed, name="trace-feed"),
    path("traces/live", feed.trace_feed_live, name="trace-feed-live"),
    path("traces/<str:trace_id>", detail.trace_detail, name="trace-detail"),
    path(
        "traces/<str:trace_id>/deliveries/<int:delivery_id>/retry", detail.delivery_retry, name="trace-delivery-retry"
    ),
    path("traces/<str:trace_id>/thumbs", feedback.trace_thumbs, name="trace-thumbs"),
    path("traces/<str:trace_id>/share", feedback.trace_share, name="trace-share"),
    path("traces/<str:trace_id>/share/<int:link_id>/revoke", feedback.trace_share_revoke, name="trace-share-revoke"),
    path("share/<str:token>", public.shared_trace_page, name="trace-shared"),
    path("sessions", groups.sessions, name="trace-sessions"),
    path("sessions/<path:session_id>", groups.session_detail, name="trace-session"),
    path("users", groups.users, name="trace-users"),
]
