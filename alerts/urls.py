from django.urls import path

from . import api

urlpatterns = [
    path("alerts", api.AlertListCreate.as_view(), name="alerts-list"),
    path("alerts/<int:alert_id>", api.AlertDetail.as_view(), name="alerts-detail"),
    path("alerts/<int:alert_id>/events", api.AlertEvents.as_view(), name="alerts-events"),
]
