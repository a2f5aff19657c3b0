"""Adding and editing an integration: a platform picker, then that platform's form. The form's
document goes through the API's serializers and the same services (`integration_create`,
`integration_update`, `config_check`, `edited_config_check`), so a page refuses exactly what the
API refuses."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from accounts.access import DashboardRequest, request_actor, team_view

from .. import services
from ..models import Integration, Platform
from ..registry import canonical_platform
from ..serializers import IntegrationInSerializer, IntegrationPatchSerializer
from .forms import IntegrationForm
from .lookup import MANAGE, integration_or_404
from .pages import check_view

# What each platform is, for the picker (the fields themselves come from the exporters).
PLATFORM_BLURBS = {
    Platform.LANGFUSE: "Traces and generations in Langfuse Cloud or self-hosted, by key pair.",
    Platform.LANGSMITH: "Runs in a LangSmith project, with token usage and cost.",
    Platform.PHOENIX: "OpenInference spans into an Arize Phoenix project.",
    Platform.MLFLOW: "MLflow traces in an experiment of your tracking server.",
    Platform.HELICONE: "Helicone request logs through its async logging API.",
    Platform.DATADOG: "LLM Observability spans in Datadog, under your ML app.",
    Platform.WEAVE: "Calls in a W&B Weave project.",
    Platform.OTLP: "Any OpenTelemetry collector or backend over OTLP/HTTP.",
    Platform.WEBHOOK: "Your own endpoint: signed JSON batches, retried until it answers 2xx.",
}


def _platform_or_404(platform: str) -> str:
    canonical = canonical_platform(platform)
    if canonical is None or canonical != platform:
        raise Http404("No such platform.")
    return canonical


def _form_page(request: DashboardRequest, form: IntegrationForm, status: int = 200, **extra: Any) -> HttpResponse:
    context = {
        "form": form,
        "platform": form.platform,
        "platform_label": Platform(form.platform).label,
        "integration": form.integration,
        "action": reverse("integrations-edit", args=[form.integration.pk])
        if form.integration
        else reverse("integrations-add", args=[form.platform]),
        **extra,
    }
    if request.htmx:  # the form replaces itself (app.js keeps what was typed in its secret fields)
        return render(request, "integrations/form.html#integration-form", context, status=status)
    return render(request, "integrations/form.html", context, status=status)


@team_view(MANAGE)
def integration_new(request: DashboardRequest) -> HttpResponse:
    platforms = [{"value": p.value, "label": p.label, "blurb": PLATFORM_BLURBS[p]} for p in Platform]
    return render(request, "integrations/new.html", {"platforms": platforms})


def _validated(form: IntegrationForm, *, partial: bool) -> dict[str, Any] | None:
    """The form's document checked by the API's serializer, or None with the errors on the form."""
    doc = form.document()
    if doc is None:
        return None
    if partial:
        doc.pop("platform")
        serializer: IntegrationInSerializer = IntegrationPatchSerializer(data=doc)
    else:
        serializer = IntegrationInSerializer(data=doc)
    if not serializer.is_valid():
        form.add_errors(serializer.errors)
        return None
    data = dict(serializer.validated_data)
    return {k: v for k, v in data.items() if k in doc} if partial else data


@team_view(MANAGE)
def integration_add(request: DashboardRequest, platform: str) -> HttpResponse:
    platform = _platform_or_404(platform)
    if request.method != "POST":
        return _form_page(request, IntegrationForm(platform=platform))
    form = IntegrationForm(request.POST, platform=platform)
    data = _validated(form, partial=False)
    if data is None:
        return _form_page(request, form, status=400)
    if "test" in request.POST:
        return _tested(request, form, data)
    try:
        integration = services.integration_create(
            team_id=request.team.pk, data=services.IntegrationInput(**data), actor=request_actor(request)
        )
    except services.NameTaken as exc:
        form.add_error("name", str(exc))
        return _form_page(request, form, status=409)
    except services.InvalidIntegration as exc:
        form.add_errors(exc.errors)
        return _form_page(request, form, status=400)
    messages.success(request, f"{integration.name} was added. Route traces to it with a rule naming it.")
    return _go(request, integration)


@team_view(MANAGE)
def integration_edit(request: DashboardRequest, integration_id: int) -> HttpResponse:
    integration = integration_or_404(request, integration_id)
    if request.method != "POST":
        return _form_page(request, IntegrationForm(platform=integration.platform, integration=integration))
    form = IntegrationForm(request.POST, platform=integration.platform, integration=integration)
    changes = _validated(form, partial=True)
    if changes is None:
        return _form_page(request, form, status=400)
    if "test" in request.POST:
        return _tested(request, form, changes)
    try:
        services.integration_update(integration=integration, changes=changes, actor=request_actor(request))
    except services.NameTaken as exc:
        form.add_error("name", str(exc))
        return _form_page(request, form, status=409)
    except services.InvalidIntegration as exc:
        form.add_errors(exc.errors)
        integration.refresh_from_db()
        return _form_page(request, form, status=400)
    messages.success(request, f"{integration.name} was saved.")
    return _go(request, integration)


def _go(request: DashboardRequest, integration: Integration) -> HttpResponse:
    url = reverse("integrations-detail", args=[integration.pk])
    return HttpResponse(headers={"HX-Redirect": url}) if request.htmx else redirect(url)


def _tested(request: DashboardRequest, form: IntegrationForm, data: dict[str, Any]) -> HttpResponse:
    """ "Test connection" on the form: the typed config, not saved. On the edit form the stored
    secrets fill in what was left blank, but only while the address stays the same."""
    integration: Integration | None = form.integration
    config = data.get("config", {})
    try:
        if integration is None:
            result = services.config_check(
                platform=form.platform,
                name=data.get("name") or form.platform,
                config=config,
                timeout_s=float(data.get("timeout_s") or 10.0),
            )
        else:
            result = services.edited_config_check(
                integration=integration,
                patch=config,
                name=data.get("name") or integration.name,
                timeout_s=float(data.get("timeout_s") or integration.timeout_s),
            )
    except services.InvalidIntegration as exc:
        form.add_errors(exc.errors)
        return _form_page(request, form, status=400)
    return _form_page(request, form, check=check_view(result))
