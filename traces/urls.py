from django.urls import path

from . import api, score_api

urlpatterns = [
    path("traces", api.TraceListCreate.as_view(), name="traces"),
    path("traces/batch", api.TraceBatch.as_view(), name="traces-batch"),
    path("traces/<str:trace_id>", api.TraceDetail.as_view(), name="trace"),
    path("traces/<str:trace_id>/scores", score_api.TraceScores.as_view(), name="trace-scores"),
]
