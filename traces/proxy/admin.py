"""Django admin for proxy upstreams: the provider key and credential headers are write-only here too."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from .models import Upstream
from .services import (
    InvalidUpstream,
    UpstreamInput,
    check_changes,
    masked_key,
    public_headers,
    upstream_create,
    upstream_update,
)

# The services' error keys → this form's fields, where they differ.
ADMIN_FIELDS = {"api_key": "new_api_key"}


class UpstreamForm(forms.ModelForm):
    new_api_key = forms.CharField(
        required=False,
        label="Provider key",
        widget=forms.PasswordInput(render_value=False),
        help_text="Leave empty to keep the stored key (type it again when the base URL changes). Stored encrypted.",
    )
    remove_api_key = forms.BooleanField(required=False, label="Remove the stored key")
    headers = forms.JSONField(
        required=False, initial=dict, help_text='{"Header-Name": "value"}. Credential headers are stored encrypted.'
    )

    class Meta:
        model = Upstream
        fields = ["team", "name", "kind", "base_url", "provider", "is_default"]

    def changes(self) -> dict[str, Any]:
        """The form as a change set for the upstream services."""
        data = self.cleaned_data
        fields = {k: data.get(k) for k in ("name", "kind", "base_url", "provider", "is_default")}
        fields["headers"] = data.get("headers") or {}
        if data.get("remove_api_key"):
            fields["api_key"] = ""
        elif data.get("new_api_key"):
            fields["api_key"] = data["new_api_key"]
        return fields

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        probe = Upstream.objects.get(pk=self.instance.pk) if self.instance.pk else Upstream()
        try:
            check_changes(probe, self.changes())
        except InvalidUpstream as exc:
            for key, messages in exc.errors.items():
                field, _, header = key.partition(".")
                field = ADMIN_FIELDS.get(field, field)
                if header:  # a credential header ("headers.authorization"): say which
                    messages = [f"{header}: {message}" for message in messages]
                self.add_error(field if field in self.fields else None, messages)
        return cleaned


@admin.register(Upstream)
class UpstreamAdmin(admin.ModelAdmin):
    form = UpstreamForm
    list_display = ["name", "team", "kind", "base_url", "provider", "is_default", "key_set"]
    list_filter = ["kind", "is_default"]
    search_fields = ["name", "base_url", "team__name"]
    list_select_related = ["team"]
    autocomplete_fields = ["team"]
    readonly_fields = ["masked_key", "masked_headers", "created_at"]
    fields = [
        "team",
        "name",
        "kind",
        "base_url",
        "provider",
        "is_default",
        "new_api_key",
        "remove_api_key",
        "masked_key",
        "headers",
        "masked_headers",
        "created_at",
    ]

    @admin.display(description="stored key")
    def masked_key(self, obj: Upstream) -> str:
        return (masked_key(obj) or "-") if obj.pk else "-"

    @admin.display(description="headers (credentials masked)")
    def masked_headers(self, obj: Upstream) -> dict[str, str]:
        return public_headers(obj) if obj.pk else {}

    @admin.display(boolean=True, description="key")
    def key_set(self, obj: Upstream) -> bool:
        return masked_key(obj) is not None

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is not None:
            # Shown masked: a masked value sent back keeps the stored credential.
            form.base_fields["headers"].initial = public_headers(obj)
        return form

    def save_model(self, request: HttpRequest, obj: Upstream, form: Any, change: bool) -> None:
        actor = f"user:{request.user.get_username()}"
        changes = form.changes()
        if change:
            saved = upstream_update(upstream=Upstream.objects.get(pk=obj.pk), changes=changes, actor=actor)
        else:
            team_id = form.cleaned_data["team"].pk
            saved = upstream_create(team_id=team_id, data=UpstreamInput(**changes), actor=actor)
        obj.pk = saved.pk
