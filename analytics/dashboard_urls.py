"""The analytics dashboard page (the API's route is in analytics/urls.py)."""

from django.urls import path

from . import views

urlpatterns = [path("analytics", views.analytics_page, name="analytics-page")]
