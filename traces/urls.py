from django.urls import path

from . import api, export_api, score_api, share_api

urlpatterns = [
    path("traces", api.TraceListCreate.as_view(), name="traces"),
    path("traces/batch", api.TraceBatch.as_view(), name="traces-batch"),
    path("traces/export", export_api.TraceExport.as_view(), name="traces-export"),
    path("traces/import", export_api.TraceImport.as_view(), name="traces-import"),
    path("traces/<str:trace_id>", api.TraceDetail.as_view(), name="trace"),
    path("traces/<str:trace_id>/scores", score_api.TraceScores.as_view(), name="trace-scores"),
    path("runs/<str:run_id>/scores", score_api.RunScores.as_view(), name="run-scores"),
    path("traces/<str:trace_id>/share", share_api.TraceShare.as_view(), name="api-trace-share"),
    path("traces/<str:trace_id>/share/<int:link_id>", share_api.TraceShareLink.as_view(), name="api-trace-share-link"),
]
