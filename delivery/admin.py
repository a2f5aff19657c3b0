"""The outbox in the Django admin: read-only, with replay as an action (audited by the service)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from .models import Delivery, DeliveryWorker, RunRoute
from .services import NotReplayable, delivery_replay


def _actor(request: HttpRequest) -> str:
    user = getattr(request, "user", None)
    return f"user:{user.get_username()}" if user is not None and user.is_authenticated else "admin"


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    """The outbox, read-only: the delivery engine owns every state change (replay is an action)."""

    list_display = ["trace_link", "destination", "status", "attempts", "next_attempt_at", "short_error"]
    list_filter = ["status", "destination"]
    search_fields = ["=trace__trace_id"]
    list_select_related = ["trace"]
    ordering = ["-id"]
    show_full_result_count = False  # no COUNT(*) over the whole outbox on every page
    actions = ["replay"]
    readonly_fields = [f.name for f in Delivery._meta.fields]

    @admin.display(description="trace", ordering="trace__trace_id")
    def trace_link(self, delivery: Delivery) -> str:
        try:
            url = reverse("admin:traces_trace_change", args=[delivery.trace_id])
        except NoReverseMatch:
            return delivery.trace.trace_id
        return format_html('<a href="{}">{}</a>', url, delivery.trace.trace_id)

    @admin.display(description="last error")
    def short_error(self, delivery: Delivery) -> str:
        text = delivery.last_error or ""
        return text if len(text) <= 100 else text[:99] + "…"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Replay the selected dead or failed deliveries")
    def replay(self, request: HttpRequest, queryset: QuerySet[Delivery]) -> None:
        replayed, skipped = 0, 0
        for delivery in queryset:
            try:
                delivery_replay(delivery=delivery, actor=_actor(request))
                replayed += 1
            except NotReplayable:
                skipped += 1
        self.message_user(request, f"Replayed {replayed}; skipped {skipped} that were not dead or failed.")
        if skipped and not replayed:
            self.message_user(request, "Only dead or failed deliveries can be replayed.", level=messages.WARNING)


@admin.register(DeliveryWorker)
class DeliveryWorkerAdmin(admin.ModelAdmin):
    """Delivery worker processes and their leases (docs/delivery.md, worker leases), read-only."""

    list_display = ["hostname", "pid", "started_at", "heartbeat_at", "id"]
    ordering = ["-heartbeat_at"]
    readonly_fields = [f.name for f in DeliveryWorker._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(RunRoute)
class RunRouteAdmin(admin.ModelAdmin):
    """Where each run goes (docs/routing.md, "Runs"): its destinations, read-only (ingest owns them)."""

    list_display = ["run_id", "team", "destination_names", "updated_at"]
    search_fields = ["=run_id"]
    ordering = ["-updated_at"]
    show_full_result_count = False
    readonly_fields = [f.name for f in RunRoute._meta.fields]

    @admin.display(description="destinations")
    def destination_names(self, route: RunRoute) -> str:
        return ", ".join(route.destinations) or "—"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
