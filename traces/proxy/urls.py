from django.urls import path

from . import api

urlpatterns = [
    path("upstreams", api.UpstreamListCreate.as_view(), name="upstreams"),
    path("upstreams/<int:upstream_id>", api.UpstreamDetail.as_view(), name="upstream"),
]
