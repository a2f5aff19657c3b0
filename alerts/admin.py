from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from integrations.urlguard import url_refusal

from .models import Alert, AlertEvent


class AlertForm(forms.ModelForm):
    """The alert's raw fields; webhook URLs pass the same URL guard as everywhere else."""

    class Meta:
        model = Alert
        fields = [
            *("team", "name", "metric", "threshold", "window_type", "window_minutes", "period", "scope"),
            *("emails", "webhooks", "enabled", "builtin", "state", "fired_window_start", "last_value"),
            *("last_evaluated_at", "created_at", "updated_at"),
        ]  # every field but signing_secret

    def clean_webhooks(self) -> Any:
        hooks = self.cleaned_data.get("webhooks") or []
        shaped = isinstance(hooks, list) and all(
            isinstance(h, dict) and set(h) == {"url"} and isinstance(h["url"], str) for h in hooks
        )
        if not shaped:
            raise forms.ValidationError('A list of objects like {"url": "https://…"}.')
        refused = [f"{h['url']}: {refusal}" for h in hooks if (refusal := url_refusal(h["url"]))]
        if refused:
            raise forms.ValidationError(refused)
        return hooks


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    form = AlertForm
    list_display = ("name", "team", "metric", "threshold", "window_type", "state", "enabled", "last_evaluated_at")
    list_filter = ("state", "enabled", "metric", "builtin")
    search_fields = ("name", "team__name")
    readonly_fields = ("state", "fired_window_start", "last_value", "last_evaluated_at", "builtin")


@admin.register(AlertEvent)
class AlertEventAdmin(admin.ModelAdmin):
    list_display = ("alert", "kind", "at", "value", "threshold")
    list_filter = ("kind",)
    readonly_fields = ("alert", "kind", "at", "value", "threshold", "window_start", "window_end", "notifications")
