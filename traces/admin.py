"""Traces in the admin: a read-only record for operators (search by id, model, session or user;
filter by status, provider, source, pricing), and the sample plants."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .models import Plant, Trace


@admin.register(Trace)
class TraceAdmin(admin.ModelAdmin):
    list_display = [
        "trace_id",
        "timestamp",
        "team",
        "model",
        "provider",
        "status",
        "total_tokens",
        "cost",
        "unpriced",
        "latency_ms",
        "destination_list",
        "source",
    ]
    list_filter = ["status", "source", "unpriced", "usage_estimated", "provider", "environment", "team"]
    search_fields = ["=trace_id", "model", "session_id", "user_id", "service_name"]
    list_select_related = ["team"]
    ordering = ["-timestamp"]
    show_full_result_count = False  # a COUNT(*) over millions of traces on every page is not worth it
    list_per_page = 50
    readonly_fields = [f.name for f in Trace._meta.get_fields() if f.concrete and not f.many_to_many]
    fieldsets = [
        (None, {"fields": ["trace_id", "team", "api_key", "source", "timestamp", "received_at"]}),
        (
            "Call",
            {
                "fields": [
                    "model",
                    "provider",
                    "status",
                    "error_type",
                    "error_message",
                    "latency_ms",
                    "time_to_first_token_ms",
                    "environment",
                    "service_name",
                    "session_id",
                    "user_id",
                ]
            },
        ),
        (
            "Usage and cost",
            {
                "fields": [
                    "prompt_tokens",
                    "completion_tokens",
                    "total_tokens",
                    "usage_estimated",
                    "cost",
                    "client_cost",
                    "unpriced",
                    "price_source",
                    "price_version",
                ]
            },
        ),
        ("Routing", {"fields": ["destinations", "routing"]}),
        ("Content", {"fields": ["tags", "metadata", "input", "output"], "classes": ["collapse"]}),
    ]

    @admin.display(description="destinations")
    def destination_list(self, trace: Trace) -> str:
        return ", ".join(trace.destinations or ()) or "-"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # traces come in through the API, the proxy and OTLP

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Plant)
class PlantAdmin(admin.ModelAdmin):
    list_display = ["name", "tag", "team"]
    list_filter = ["tag", "team"]
    search_fields = ["name", "tag", "team__name"]
    list_select_related = ["team"]
    autocomplete_fields = ["team"]


# The proxy's Upstream admin lives with the proxy (traces/proxy/admin.py); importing it registers it.
from .proxy import admin as proxy_admin  # noqa: E402, F401
