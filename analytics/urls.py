from django.urls import path

from . import api

urlpatterns = [path("analytics", api.Analytics.as_view(), name="analytics")]
