"""Traces in the admin: a read-only record for operators (search by id, model, session or user;
filter by status, provider, source, pricing), and the sample plants."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils import timezone

from config.money import usd

from .models import Plant, Trace


@admin.register(Trace)
class TraceAdmin(admin.ModelAdmin):
    # Readable at 1280 px beside the filters: the columns that tell traces apart, each on one line
    # (dashboard/admin.css; a wider list scrolls in its box). Destinations and the rest are
    # on the trace's page; provider and source are filters.
    list_display = ["trace_id", "when", "team", "model", "status", "tokens", "cost_shown", "latency"]
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

    class Media:
        css = {"all": ["dashboard/admin.css"]}

    @admin.display(description="timestamp", ordering="timestamp")
    def when(self, trace: Trace) -> str:
        return f"{timezone.localtime(trace.timestamp):%Y-%m-%d %H:%M}"

    @admin.display(description="tokens", ordering="total_tokens")
    def tokens(self, trace: Trace) -> str:
        return "-" if trace.total_tokens is None else f"{trace.total_tokens:,}"

    @admin.display(description="latency", ordering="latency_ms")
    def latency(self, trace: Trace) -> str:
        return "-" if trace.latency_ms is None else f"{trace.latency_ms:,} ms"

    @admin.display(description="cost", ordering="cost")
    def cost_shown(self, trace: Trace) -> str:
        return "unpriced" if trace.cost is None else usd(trace.cost)

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
