"""`/settings/prices`: the team's own prices (every role reads them; admins and owners add, change and
delete them, through the same `clean_price` and services as the API), and the models its calls used
in the last 30 days that nothing prices, each a click from a price for it."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.access import DashboardRequest, request_actor, team_view
from accounts.roles import Permission

from . import services
from .models import TeamPrice
from .selectors import UNPRICED_DAYS, prices_for_team, unpriced_models

MANAGE = Permission.MANAGE_PRICES
_MONEY = {"inputmode": "decimal", "autocomplete": "off", "spellcheck": "false", "placeholder": "0.00"}


def _money(label: str, help_text: str, *, required: bool = False) -> forms.CharField:
    return forms.CharField(label=label, required=required, help_text=help_text, widget=forms.TextInput(attrs=_MONEY))


class PriceForm(forms.Form):
    """Renders the fields and carries their errors; `services.clean_price` judges the values."""

    model = forms.CharField(
        label="Model",
        max_length=services.MAX_MODEL,
        help_text="The name traces carry, or a prefix ending in * (ft:gpt-4o-mini:acme:*).",
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    provider = forms.CharField(
        label="Provider",
        required=False,
        max_length=services.MAX_PROVIDER,
        help_text="Only calls from this provider; empty: any.",
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    input_per_mtok = _money("Input", "USD per million prompt tokens.", required=True)
    output_per_mtok = _money("Output", "USD per million completion tokens.", required=True)
    cached_input_per_mtok = _money("Cached input", "Empty: at the input price.")
    cache_write_per_mtok = _money("Cache write", "Empty: at the input price.")
    reasoning_per_mtok = _money("Reasoning", "Empty: at the output price.")
    effective_from = forms.CharField(
        label="Effective from (UTC)",
        required=False,
        help_text="Calls at or after this time; empty: every call.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}),
    )

    def __init__(self, *args: Any, prefix_id: str = "new", **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", f"price-{prefix_id}-%s")
        super().__init__(*args, **kwargs)
        self.prefix_id = prefix_id

    def submitted(self) -> dict[str, Any]:
        """The posted values as `clean_price` takes them: text, blanks for "none"."""
        return {name: (self.data.get(name) or "").strip() for name in services.FIELDS}

    def add_errors(self, errors: dict[str, list[str]]) -> None:
        for name, messages_ in errors.items():
            for message in messages_:
                self.add_error(name if name in self.fields else None, message)


def _initial(price: TeamPrice) -> dict[str, Any]:
    values: dict[str, Any] = {"model": price.model, "provider": price.provider}
    for name in services.PRICE_FIELDS:
        values[name] = services.decimal_text(getattr(price, name)) or ""
    values["effective_from"] = price.effective_from.strftime("%Y-%m-%dT%H:%M:%S") if price.effective_from else ""
    return values


def _page(
    request: DashboardRequest, *, form: PriceForm | None = None, edit: PriceForm | None = None, status: int = 200
) -> HttpResponse:
    team_id = request.team.pk
    prices = list(prices_for_team(team_id))
    editing_id = edit.prefix_id if edit is not None else None
    if edit is None and request.GET.get("edit", "").isdigit():
        row = next((p for p in prices if p.pk == int(request.GET["edit"])), None)
        if row is not None:
            edit = PriceForm(initial=_initial(row), prefix_id=str(row.pk))
            editing_id = str(row.pk)
    if form is None:
        prefill = {k: request.GET.get(k, "")[:200] for k in ("model", "provider") if request.GET.get(k)}
        form = PriceForm(initial=prefill)
    context = {
        "prices": [{"row": p, "text": _initial(p), "editing": str(p.pk) == editing_id} for p in prices],
        "editing": next((p for p in prices if str(p.pk) == editing_id), None),
        "form": form,
        "edit": edit,
        "prefilled": bool(request.GET.get("model")),
        "unpriced": unpriced_models(team_id),
        "unpriced_days": UNPRICED_DAYS,
    }
    return render(request, "prices/settings.html", context, status=status)


@team_view()
def prices_page(request: DashboardRequest) -> HttpResponse:
    return _page(request)


@require_POST
@team_view(MANAGE)
def price_add(request: DashboardRequest) -> HttpResponse:
    form = PriceForm(request.POST)
    try:
        data = services.clean_price(form.submitted(), form=True)
        price = services.price_create(team_id=request.team.pk, data=data, actor=request_actor(request))
    except services.InvalidPrice as exc:
        form.add_errors(exc.errors)
        return _page(request, form=form, status=400)
    except services.PriceExists as exc:
        form.add_error("model", str(exc))
        return _page(request, form=form, status=409)
    messages.success(
        request,
        f"Price for {price.model} added. Calls it covers are priced by it from now on; traces already "
        "stored keep their cost until they are re-priced.",
    )
    return redirect("settings-prices")


@require_POST
@team_view(MANAGE)
def price_edit(request: DashboardRequest, price_id: int) -> HttpResponse:
    price = get_object_or_404(TeamPrice, pk=price_id, team_id=request.team.pk)
    form = PriceForm(request.POST, prefix_id=str(price.pk))
    try:
        changes = services.clean_price(form.submitted(), form=True)
        services.price_update(price=price, changes=changes, actor=request_actor(request))
    except services.InvalidPrice as exc:
        form.add_errors(exc.errors)
        return _page(request, edit=form, status=400)
    except services.PriceExists as exc:
        form.add_error("model", str(exc))
        return _page(request, edit=form, status=409)
    messages.success(request, f"Price for {price.model} saved (revision {price.revision}).")
    return redirect("settings-prices")


@require_POST
@team_view(MANAGE)
def price_delete(request: DashboardRequest, price_id: int) -> HttpResponse:
    price = get_object_or_404(TeamPrice, pk=price_id, team_id=request.team.pk)
    services.price_delete(price=price, actor=request_actor(request))
    messages.success(request, f"Price for {price.model} deleted.")
    return redirect("settings-prices")
