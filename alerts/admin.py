from django.contrib import admin

from .models import Alert, AlertEvent


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = ("name", "team", "metric", "threshold", "window_type", "state", "enabled", "last_evaluated_at")
    list_filter = ("state", "enabled", "metric", "builtin")
    search_fields = ("name", "team__name")
    exclude = ("signing_secret",)
    readonly_fields = ("state", "fired_window_start", "last_value", "last_evaluated_at", "builtin")


@admin.register(AlertEvent)
class AlertEventAdmin(admin.ModelAdmin):
    list_display = ("alert", "kind", "at", "value", "threshold")
    list_filter = ("kind",)
    readonly_fields = ("alert", "kind", "at", "value", "threshold", "window_start", "window_end", "notifications")
