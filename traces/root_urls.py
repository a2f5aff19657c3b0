"""Paths at the server root: the interface spec's sample endpoint."""

from django.urls import path

from . import api

urlpatterns = [
    path("plants", api.PlantList.as_view(), name="plants"),
]
