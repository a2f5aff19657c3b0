from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from .models import RepriceJob


@admin.register(RepriceJob)
class RepriceJobAdmin(admin.ModelAdmin):
    """Read-only: a job is asked for through the API or the settings page (which check it), and its
    figures are the worker's."""

    list_display = ("id", "team", "status", "since", "until", "model", "traces_done", "traces_changed", "created_at")
    list_filter = ("status",)
    search_fields = ("team__name", "model", "actor")
    list_select_related = ("team",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: RepriceJob | None = None) -> bool:
        return False
