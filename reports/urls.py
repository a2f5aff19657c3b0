from django.urls import path, register_converter

from . import api
from .models import Format


class FormatConverter:
    regex = "|".join(Format.values)

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(FormatConverter, "report_format")

urlpatterns = [
    path("reports", api.ReportListCreate.as_view(), name="reports-list"),
    path("reports/<int:report_id>", api.ReportDetail.as_view(), name="reports-detail"),
    path("reports/<int:report_id>/run", api.ReportRunNow.as_view(), name="reports-run"),
    path("reports/<int:report_id>/runs", api.ReportRuns.as_view(), name="reports-runs"),
    path("reports/<int:report_id>/runs/<int:run_id>", api.ReportRunDetail.as_view(), name="reports-run-detail"),
    path(
        "reports/<int:report_id>/runs/<int:run_id>/<report_format:fmt>",
        api.ReportRunFile.as_view(),
        name="report-run-file",
    ),
]
