from django.urls import path

from . import api

urlpatterns = [
    path("runs", api.RunList.as_view(), name="runs"),
    path("runs/<str:run_id>", api.RunDetail.as_view(), name="run"),
]
