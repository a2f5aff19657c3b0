"""The integration form: its fields come from the platform's declared config fields
(`integrations.exporters.configs.Field`), and it only turns what was typed into the API's document.

Whether a value is valid is the API serializers' (`integrations.serializers`) and the services'
business; their messages are put back next to the field they name (`add_errors`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from django import forms

from config.crypto import mask

from ..exporters.configs import Field
from ..models import Integration
from ..registry import exporter_class
from ..services import public_config, secrets_set
from .settings_form import ERROR_FIELDS, settings_document, settings_fields, settings_initial

CONFIG = "config_"  # form field prefix of a platform config field
CLEAR = "__clear"  # suffix of the "remove the stored secret" box of an optional secret
RETRY = "retry_"  # form field prefix of a retry policy field
WORDS = {"api": "API", "url": "URL", "id": "ID", "ml": "ML", "uri": "URI"}
# On an address field of an integration holding secrets (services.ConfigPatch.secrets_to_give_again).
ADDRESS_HELP = "Changing it asks for the stored secrets again: they only go to the address they were saved with."
# The keys of an error document (the serializers' and services') → the form field they belong to.
SCORE_MAPPINGS = "config_score_mappings"  # config.score_mappings (docs/scores.md), on every platform's form
ENVELOPE = ("name", "default_tags", "metadata_mapping", "timeout_s", "enabled")


class SchemaCharField(forms.CharField):
    """A text field whose "required" is shown but not checked here: the serializers and services say
    it (one rule, one message), along with everything else wrong in the form at once."""

    def validate(self, value: Any) -> None:
        return None


def platform_fields(platform: str) -> tuple[Field, ...]:
    return tuple(getattr(exporter_class(platform), "fields", ()))


def field_label(name: str) -> str:
    """``apiKey`` → "API key", ``mlApp`` → "ML app", ``projectId`` → "Project ID"."""
    words = [w.lower() for w in re.sub(r"(?<!^)(?=[A-Z])", " ", name).split()]
    shown = [WORDS.get(w, w) for w in words]
    return " ".join([shown[0][:1].upper() + shown[0][1:], *shown[1:]])


def _lines(text: str) -> list[tuple[int, str]]:
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def parse_pairs(text: str, separator: str, what: str) -> dict[str, str]:
    """Lines of ``key<separator>value`` → a dict; a line without the separator is an error naming it."""
    out: dict[str, str] = {}
    for number, line in _lines(text):
        key, sep, value = line.partition(separator)
        if not sep or not key.strip():
            raise forms.ValidationError(f"Line {number}: write it as {what}.")
        out[key.strip()] = value.strip()
    return out


def pairs_text(values: Mapping[str, Any], separator: str) -> str:
    return "\n".join(f"{k}{separator}{'' if v is None else v}" for k, v in values.items())


def _number(label: str, help_text: str, step: str) -> SchemaCharField:
    return SchemaCharField(
        label=label, required=False, help_text=help_text, widget=forms.NumberInput(attrs={"step": step})
    )


class IntegrationForm(forms.Form):
    name = SchemaCharField(
        label="Name",
        help_text="Routing rules send to an integration by this name (or by its platform).",
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    enabled = forms.BooleanField(label="Enabled: deliver traces to it", required=False, initial=True)
    default_tags = SchemaCharField(
        label="Default tags",
        required=False,
        help_text="Comma-separated; added to every trace sent here.",
        widget=forms.TextInput(attrs={"placeholder": "tracerelay, production"}),
    )
    metadata_mapping = SchemaCharField(
        label="Metadata mapping",
        required=False,
        help_text="One per line: our key = the destination's key. Leave the right side empty to drop the key; "
        "keys not listed pass unchanged.",
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": "customer_id = user\ninternal_note =", "spellcheck": "false"}
        ),
    )
    timeout_s = _number("Timeout (seconds)", "Per request, 0.5 to 120.", "0.5")
    retry_max_attempts = _number("Attempts", "Sends before a delivery becomes a dead letter, 1 to 50.", "1")
    retry_base_delay_s = _number("First retry after (s)", "Doubles each time, with jitter.", "0.1")
    retry_max_delay_s = _number("Longest wait (s)", "The cap on the wait between two attempts.", "1")

    def __init__(self, data: Any = None, *, platform: str, integration: Integration | None = None) -> None:
        self.platform = platform
        self.integration = integration
        self.schema = platform_fields(platform)
        super().__init__(data, initial=self._initial(integration) if integration else None)
        stored = set(secrets_set(integration)) if integration else set()
        shown = public_config(integration) if integration else {}
        for f in self.schema:
            field = self._config_field(f, f.name in stored, shown.get(f.name))
            if stored and f.is_address:
                field.help_text = (field.help_text + " " if field.help_text else "") + ADDRESS_HELP
            self.fields[CONFIG + f.name] = field
            if f.secret and not f.required and f.name in stored:
                self.fields[CONFIG + f.name + CLEAR] = forms.BooleanField(
                    label=f"Remove the stored {field_label(f.name).lower()}", required=False
                )
        self.fields.update(settings_fields(platform))
        self.fields[SCORE_MAPPINGS] = SchemaCharField(
            label="Score mappings",
            required=False,
            help_text="One per line: our score name = the name this destination gets. Leave the right side empty "
            "to withhold that score here; names not listed go out unchanged.",
            widget=forms.Textarea(
                attrs={"rows": 3, "placeholder": "thumbs = user_feedback\ninternal_eval =", "spellcheck": "false"}
            ),
        )
        if integration is None:
            self.fields["name"].initial = platform

    def _initial(self, integration: Integration) -> dict[str, Any]:
        policy = integration.retry_policy or {}
        initial: dict[str, Any] = {
            "name": integration.name,
            "enabled": integration.enabled,
            "default_tags": ", ".join(integration.default_tags or []),
            "metadata_mapping": pairs_text(integration.metadata_mapping or {}, " = "),
            "timeout_s": f"{integration.timeout_s:g}",
            **{RETRY + k: f"{v:g}" for k, v in policy.items() if isinstance(v, (int, float))},
        }
        shown = public_config(integration)
        for key, value in shown.items():
            initial[CONFIG + key] = pairs_text(value, ": ") if isinstance(value, Mapping) else value
        initial.update(settings_initial(shown))
        initial[SCORE_MAPPINGS] = pairs_text((integration.config or {}).get("score_mappings") or {}, " = ")
        return initial

    def _config_field(self, f: Field, is_set: bool, shown: Any) -> forms.Field:
        label = field_label(f.name)
        help_text = f.help
        if f.kind == "headers":
            return SchemaCharField(
                label=label,
                required=f.required,
                help_text=(help_text + " " if help_text else "")
                + "One per line, Name: value. Credential headers are stored encrypted and shown masked; "
                "leave a masked value as it is to keep it.",
                widget=forms.Textarea(attrs={"rows": 3, "placeholder": "X-Team: search", "spellcheck": "false"}),
            )
        if f.kind == "bool":
            return forms.BooleanField(label=label, required=False, help_text=help_text, initial=f.default)
        if f.kind == "choice":
            choices = [(c, c) for c in f.choices]
            if not f.required and f.default is None:
                choices.insert(0, ("", "—"))
            return SchemaCharField(
                label=label,
                required=f.required,
                help_text=help_text,
                initial=f.default,
                widget=forms.Select(choices=choices),
            )
        if f.secret:
            required = f.required and not is_set
            if is_set:
                help_text = f"Set ({shown or mask('')}). Leave blank to keep it." + (
                    f" {help_text}" if help_text else ""
                )
            else:
                help_text = help_text or "Stored encrypted; never shown again."
            return SchemaCharField(
                label=label,
                required=required,
                help_text=help_text,
                widget=forms.PasswordInput(attrs={"autocomplete": "new-password", "spellcheck": "false"}),
            )
        attrs = {"spellcheck": "false", "autocomplete": "off"}
        if isinstance(f.default, str):
            attrs["placeholder"] = f.default
        elif f.kind in ("url", "base_url"):
            attrs["placeholder"] = "https://"
        widget = forms.URLInput(attrs=attrs) if f.kind in ("url", "base_url") else forms.TextInput(attrs=attrs)
        if f.default is not None and not help_text:
            help_text = f"Default {f.default}." if isinstance(f.default, str) else ""
        return SchemaCharField(label=label, required=f.required, help_text=help_text, widget=widget)

    @property
    def validates_responses(self) -> bool:
        """Whether the platform takes ``config.response_validation`` (the form's section for it)."""
        return "setting_rv_status" in self.fields

    # --- the form → the API's document -------------------------------------------------------

    def config_rows(self) -> list[tuple[forms.BoundField, forms.BoundField | None]]:
        """Each platform field, with the box that removes its stored secret when it has one."""
        return [
            (self[CONFIG + f.name], self[CONFIG + f.name + CLEAR] if CONFIG + f.name + CLEAR in self.fields else None)
            for f in self.schema
        ]

    def secret_names(self) -> set[str]:
        return {f.name for f in self.schema if f.secret}

    def document(self) -> dict[str, Any] | None:
        """What was typed, as the API's create/PATCH body (``platform`` included); None with the
        parsing errors (a line that is not a pair) added to their fields."""
        if not self.is_valid():
            return None
        data = self.cleaned_data
        doc: dict[str, Any] = {
            "name": data["name"].strip(),
            "platform": self.platform,
            "enabled": bool(data["enabled"]),
            "default_tags": [t.strip() for t in data["default_tags"].split(",") if t.strip()],
        }
        try:
            doc["metadata_mapping"] = parse_pairs(data["metadata_mapping"], "=", "our_key = their_key")
        except forms.ValidationError as error:
            self.add_error("metadata_mapping", error)
        if data["timeout_s"].strip():
            doc["timeout_s"] = data["timeout_s"].strip()
        policy = {k: data[RETRY + k].strip() for k in ("max_attempts", "base_delay_s", "max_delay_s")}
        doc["retry_policy"] = {k: v for k, v in policy.items() if v}
        doc["config"] = {**self._config(), **settings_document(self, patch=self.integration is not None)}
        return None if self.errors else doc

    def _config(self) -> dict[str, Any]:
        """The config part. New: the fields filled in. Edit (a PATCH): every field, an emptied one as
        null (back to its default), except a secret left blank (kept: left out of the PATCH)."""
        config: dict[str, Any] = {}
        for f in self.schema:
            key = CONFIG + f.name
            value = self.cleaned_data.get(key)
            if f.kind == "headers":
                try:
                    value = parse_pairs(value or "", ":", "Name: value")
                except forms.ValidationError as error:
                    self.add_error(key, error)
                    continue
            elif f.kind == "bool":
                value = bool(value)
            elif isinstance(value, str):
                value = value.strip()
            if f.secret and self.cleaned_data.get(key + CLEAR):
                config[f.name] = None  # a PATCH null: removed
                continue
            if f.secret and not value:
                continue  # new: not set; edit: keep the stored one
            if value in ("", None) or (f.kind == "headers" and not value):
                if self.integration is not None:  # a PATCH: emptied means "not set" (or no headers)
                    config[f.name] = {} if f.kind == "headers" else None
                continue
            config[f.name] = value
        try:
            mappings = parse_pairs(self.cleaned_data.get(SCORE_MAPPINGS) or "", "=", "our_name = their_name")
        except forms.ValidationError as error:
            self.add_error(SCORE_MAPPINGS, error)
        else:
            if mappings:
                config["score_mappings"] = {k: (v or None) for k, v in mappings.items()}
            elif self.integration is not None and (self.integration.config or {}).get("score_mappings"):
                config["score_mappings"] = None  # a PATCH: emptied means none
        return config

    def add_errors(self, errors: Mapping[str, Any]) -> None:
        """An error document (DRF's nested one, or a service's ``{"config.url": [...]}``) → each
        message next to its field; one that names no field goes on top of the form."""
        for key, messages in flatten(errors):
            head, _, rest = key.partition(".")
            part = rest.partition(".")[2]
            if head == "config" and part:  # one header of the headers field: say which
                messages = [f"{part}: {message}" for message in messages]
            self.add_error(self._field_for(key), messages)

    def _field_for(self, key: str) -> str | None:
        head, _, rest = key.partition(".")
        if head in ENVELOPE:
            return head
        if head == "retry_policy" and RETRY + rest.split(".")[0] in self.fields:
            return RETRY + rest.split(".")[0]
        if head == "config" and CONFIG + rest.split(".")[0] in self.fields:
            return CONFIG + rest.split(".")[0]
        if head == "config" and ERROR_FIELDS.get(rest.split(".")[0]) in self.fields:
            return ERROR_FIELDS[rest.split(".")[0]]
        return None


def flatten(errors: Any, prefix: str = "") -> Iterable[tuple[str, list[str]]]:
    """``{"retry_policy": {"max_delay_s": ["…"]}}`` → ``("retry_policy.max_delay_s", ["…"])``."""
    if isinstance(errors, Mapping):
        for key, value in errors.items():
            yield from flatten(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(errors, (list, tuple)) and errors and not all(isinstance(e, str) for e in errors):
        for index, value in enumerate(errors):
            yield from flatten(value, f"{prefix}.{index}" if prefix else str(index))
    elif isinstance(errors, (list, tuple)):
        if errors:
            yield prefix, [str(e) for e in errors]
    else:
        yield prefix, [str(errors)]
