from django.urls import path

from . import views
from .urls import FormatConverter  # noqa: F401 (registers <report_format:…>)

urlpatterns = [
    path("reports", views.report_list, name="reports"),
    path("reports/new", views.report_new, name="report-new"),
    path("reports/<int:report_id>", views.report_detail, name="report-detail"),
    path("reports/<int:report_id>/edit", views.report_edit, name="report-edit"),
    path("reports/<int:report_id>/run", views.report_run, name="report-run"),
    path("reports/<int:report_id>/delete", views.report_delete, name="report-delete"),
    path(
        "reports/<int:report_id>/runs/<int:run_id>/<report_format:fmt>",
        views.report_download,
        name="report-download",
    ),
]
