from django.urls import path

from . import api

urlpatterns = [
    path("dashboards", api.DashboardListCreate.as_view(), name="dashboards-list"),
    path("dashboards/<int:dashboard_id>", api.DashboardDetail.as_view(), name="dashboards-detail"),
]
