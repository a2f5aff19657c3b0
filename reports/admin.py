from django.contrib import admin

from .models import Report, ReportRun


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ("name", "team", "time_range", "group_by", "schedule", "updated_at")
    list_filter = ("team",)
    search_fields = ("name",)
    readonly_fields = ("periodic_task", "created_at", "updated_at")


@admin.register(ReportRun)
class ReportRunAdmin(admin.ModelAdmin):
    list_display = ("id", "report", "status", "trigger", "attempts", "created_at", "finished_at")
    list_filter = ("status", "trigger")
    exclude = ("csv", "pdf")  # downloads are on the dashboard and the API
    readonly_fields = (
        "report",
        "since",
        "until",
        "attempts",
        "error",
        "emailed_to",
        "created_at",
        "started_at",
        "finished_at",
    )
