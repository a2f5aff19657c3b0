"""/integrations/new/<platform> and /integrations/<id>/edit: the platform's fields, secrets write-only,
"Test connection" without saving, and bad input shown next to its field (admins and owners only)."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from integrations.models import Integration
from integrations.selectors import full_config
from integrations.services import IntegrationInput, integration_create
from tests.fakes import FakeWebhookReceiver, Reply

from .integrations_setup import MANAGERS, NOT_MANAGERS, SECRET, make_hook, webhook_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def hook(team):
    return make_hook(team)


# --- add ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", MANAGERS)
def test_admins_pick_a_platform_and_see_its_fields(as_role, role):
    client = as_role(role)
    picker = client.get("/integrations/new").content.decode()
    for platform in ["langfuse", "langsmith", "phoenix", "mlflow", "helicone", "datadog", "weave", "otlp", "webhook"]:
        assert f'href="/integrations/new/{platform}"' in picker
    form = client.get("/integrations/new/langfuse").content.decode()
    assert 'name="config_publicKey"' in form and 'name="config_secretKey"' in form and 'name="config_host"' in form
    assert 'type="password"' in form and "https://cloud.langfuse.com" in form
    assert 'name="config_url"' not in form
    datadog = client.get("/integrations/new/datadog").content.decode()
    assert '<select name="config_site"' in datadog and "datadoghq.eu" in datadog


def test_an_unknown_platform_is_a_404(as_role):
    assert as_role("owner").get("/integrations/new/splunk").status_code == 404
    assert as_role("owner").get("/integrations/new/custom-webhook").status_code == 404  # aliases are not pages


@pytest.mark.parametrize("role", MANAGERS)
def test_admins_add_a_webhook(as_role, role, team):
    response = as_role(role).post(
        "/integrations/new/webhook",
        webhook_form(
            name="billing",
            config_secret="s3cret-signing-key",
            config_headers="X-Env: prod\nAuthorization: Bearer tok-123456",
            default_tags="relay, prod",
            metadata_mapping="customer = user\ninternal =",
            timeout_s="7.5",
            retry_max_attempts="4",
        ),
    )
    integration = Integration.objects.get(team=team, name="billing")
    assert response.status_code == 302 and response["Location"] == f"/integrations/{integration.pk}"
    assert integration.config == {"url": "http://127.0.0.1:9/hook", "headers": {"X-Env": "prod"}}
    assert "s3cret" not in integration.secrets  # encrypted
    config = full_config(integration)
    assert config["secret"] == "s3cret-signing-key"
    assert config["headers"] == {"X-Env": "prod", "Authorization": "Bearer tok-123456"}
    assert integration.default_tags == ["relay", "prod"]
    assert integration.metadata_mapping == {"customer": "user", "internal": None}
    assert integration.timeout_s == 7.5 and integration.retry_policy["max_attempts"] == 4
    assert integration.retry_policy["base_delay_s"] == 1.0  # the default kept
    assert AuditEvent.objects.get(team=team, action="integration.create").actor.startswith("user:")


def test_defaults_apply_to_fields_left_blank(as_role, team):
    response = as_role("owner").post(
        "/integrations/new/langfuse",
        {"name": "lf", "enabled": "on", "config_publicKey": "pk-lf-1", "config_secretKey": "sk-lf-123456789"},
    )
    assert response.status_code == 302
    integration = Integration.objects.get(team=team, name="lf")
    assert integration.config["host"] == "https://cloud.langfuse.com" and integration.timeout_s == 10.0


@pytest.mark.parametrize("role", NOT_MANAGERS)
def test_members_and_viewers_cannot_add(as_role, role):
    client = as_role(role)
    assert client.get("/integrations/new").status_code == 403
    assert client.get("/integrations/new/webhook").status_code == 403
    assert client.post("/integrations/new/webhook", webhook_form()).status_code == 403
    assert not Integration.objects.exists()


@pytest.mark.parametrize(
    "changes,field,message",
    [
        ({"config_url": ""}, "config_url", "This field is required."),
        ({"config_url": "not a url"}, "config_url", "URL"),
        ({"config_url": "http://169.254.169.254/latest/meta-data"}, "config_url", "metadata"),
        ({"config_url": "ftp://example.com/hook"}, "config_url", "http"),
        ({"name": ""}, "name", "blank"),
        ({"name": "-bad name"}, "name", "Start with a letter or digit"),
        ({"name": "langfuse"}, "name", "names the langfuse platform"),
        ({"metadata_mapping": "customer"}, "metadata_mapping", "Line 1: write it as our_key = their_key."),
        ({"config_headers": "no colon here"}, "config_headers", "Line 1"),
        ({"config_headers": "Host: evil"}, "config_headers", "set by tracerelay"),
        ({"timeout_s": "500"}, "timeout_s", "less than or equal to 120"),
        ({"timeout_s": "soon"}, "timeout_s", "A valid number is required."),
        ({"retry_max_attempts": "0"}, "retry_max_attempts", "greater than or equal to 1"),
        ({"retry_base_delay_s": "60", "retry_max_delay_s": "10"}, "retry_max_delay_s", "at least base_delay_s"),
    ],
)
def test_bad_input_shows_next_to_its_field(as_role, changes, field, message):
    response = as_role("admin").post("/integrations/new/webhook", webhook_form(**changes))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert field in errors and message in " ".join(errors[field]), errors
    assert f'id="id_{field}_error"' in response.content.decode()
    assert not Integration.objects.exists()


def test_every_problem_is_shown_at_once(as_role):
    response = as_role("admin").post(
        "/integrations/new/langfuse", {"name": "", "config_host": "http://169.254.169.254", "timeout_s": "0"}
    )
    errors = response.context["form"].errors
    assert response.status_code == 400
    assert {"name", "timeout_s"} <= set(errors)


def test_config_errors_show_once_the_envelope_is_valid(as_role):
    response = as_role("admin").post(
        "/integrations/new/langfuse", {"name": "lf", "config_host": "http://169.254.169.254"}
    )
    errors = response.context["form"].errors
    assert {"config_publicKey", "config_secretKey", "config_host"} <= set(errors), errors


def test_a_taken_name_is_refused_on_the_name(as_role, hook):
    response = as_role("admin").post("/integrations/new/webhook", webhook_form(name="orders-hook"))
    assert response.status_code == 409
    assert "already has an integration named" in response.context["form"].errors["name"][0]


def test_a_secret_typed_is_never_rendered_back(as_role):
    response = as_role("admin").post(
        "/integrations/new/webhook", webhook_form(config_url="", config_secret="typed-secret-1")
    )
    assert response.status_code == 400 and "typed-secret-1" not in response.content.decode()


# --- edit --------------------------------------------------------------------------------------------


def edit_form(hook, **changes):
    shown = {
        "name": hook.name,
        "config_url": hook.config["url"],
        "config_headers": "X-Team: search",
        "default_tags": "relay",
        "metadata_mapping": "customer = user",
        "timeout_s": "5",
        "retry_max_attempts": "3",
        "retry_base_delay_s": "1",
        "retry_max_delay_s": "300",
    }
    return webhook_form(**{**shown, **changes})


def test_the_edit_form_shows_values_but_no_secret(as_role, hook):
    text = as_role("admin").get(f"/integrations/{hook.pk}/edit").content.decode()
    assert 'value="orders-hook"' in text and 'value="http://127.0.0.1:9/hook"' in text
    assert SECRET not in text and "Set (****7788). Leave blank to keep it." in text


@pytest.mark.parametrize("role", MANAGERS)
def test_a_secret_left_blank_keeps_its_value(as_role, role, hook):
    response = as_role(role).post(f"/integrations/{hook.pk}/edit", edit_form(hook, name="orders", timeout_s="9"))
    assert response.status_code == 302
    hook.refresh_from_db()
    assert hook.name == "orders" and hook.timeout_s == 9
    assert full_config(hook)["secret"] == SECRET
    event = AuditEvent.objects.get(action="integration.update")
    assert event.data["secrets_changed"] == [] and "name" in event.data["changed"]


def test_a_new_secret_replaces_the_old(as_role, hook):
    as_role("owner").post(f"/integrations/{hook.pk}/edit", edit_form(hook, config_secret="brand-new-secret-99"))
    hook.refresh_from_db()
    assert full_config(hook)["secret"] == "brand-new-secret-99"
    assert AuditEvent.objects.get(action="integration.update").data["secrets_changed"] == ["secret"]


def test_an_optional_secret_can_be_removed(as_role, hook):
    client = as_role("admin")
    assert 'name="config_secret__clear"' in client.get(f"/integrations/{hook.pk}/edit").content.decode()
    assert client.post(f"/integrations/{hook.pk}/edit", edit_form(hook, config_secret__clear="on")).status_code == 302
    hook.refresh_from_db()
    assert "secret" not in full_config(hook)
    assert AuditEvent.objects.get(action="integration.update").data["secrets_changed"] == ["secret"]


def test_a_required_secret_has_no_remove_box(as_role, team):
    integration = integration_create(
        team_id=team.pk,
        data=IntegrationInput(
            name="lf",
            platform="langfuse",
            config={"publicKey": "pk-lf-1", "secretKey": "sk-lf-123456789"},
            default_tags=[],
            metadata_mapping={},
            timeout_s=10,
            retry_policy={},
        ),
        actor="test",
    )
    text = as_role("admin").get(f"/integrations/{integration.pk}/edit").content.decode()
    assert 'name="config_secretKey"' in text and "__clear" not in text


def test_a_masked_credential_header_sent_back_keeps_its_value(as_role, team):
    integration = integration_create(
        team_id=team.pk,
        data=IntegrationInput(
            name="auth-hook",
            platform="webhook",
            config={"url": "http://127.0.0.1:9/hook", "headers": {"Authorization": "Bearer abcdefgh1234"}},
            default_tags=[],
            metadata_mapping={},
            timeout_s=10,
            retry_policy={},
        ),
        actor="test",
    )
    client = as_role("admin")
    text = client.get(f"/integrations/{integration.pk}/edit").content.decode()
    assert "Authorization: ****1234" in text and "abcdefgh" not in text
    form = edit_form(integration, config_headers="Authorization: ****1234\nX-New: 1")
    assert client.post(f"/integrations/{integration.pk}/edit", form).status_code == 302
    integration.refresh_from_db()
    assert full_config(integration)["headers"] == {"Authorization": "Bearer abcdefgh1234", "X-New": "1"}


def test_an_edit_with_bad_input_changes_nothing(as_role, hook):
    response = as_role("admin").post(
        f"/integrations/{hook.pk}/edit", edit_form(hook, config_url="http://169.254.169.254/")
    )
    assert response.status_code == 400 and "config_url" in response.context["form"].errors
    hook.refresh_from_db()
    assert hook.config["url"] == "http://127.0.0.1:9/hook"


@pytest.mark.parametrize("role", NOT_MANAGERS)
def test_members_and_viewers_cannot_edit(as_role, role, hook):
    client = as_role(role)
    assert client.get(f"/integrations/{hook.pk}/edit").status_code == 403
    assert client.post(f"/integrations/{hook.pk}/edit", edit_form(hook, name="x")).status_code == 403
    hook.refresh_from_db()
    assert hook.name == "orders-hook"


# --- test connection on the form ----------------------------------------------------------------------


def test_test_connection_on_the_add_form_checks_without_saving(as_role):
    with FakeWebhookReceiver(secret="sig-secret-1234567") as fake:
        form = webhook_form(config_url=fake.url + "/hook", config_secret="sig-secret-1234567", test="1")
        response = as_role("admin").post("/integrations/new/webhook", form)
        assert response.status_code == 200
        assert response.context["check"]["ok"] is True and len(fake.pings) == 1
        assert "Connection works" in response.content.decode()
        fake.queue(Reply(503, "down for maintenance"))
        failed = as_role("admin").post("/integrations/new/webhook", form)
    assert failed.context["check"]["ok"] is False and "Connection failed" in failed.content.decode()
    assert failed.context["check"]["status_code"] == 503
    assert not Integration.objects.exists()


def test_test_connection_on_the_edit_form_uses_the_stored_secret(as_role, team):
    with FakeWebhookReceiver(secret=SECRET) as fake:
        integration = integration_create(
            team_id=team.pk,
            data=IntegrationInput(
                name="signed",
                platform="webhook",
                config={"url": fake.url + "/hook", "secret": SECRET},
                default_tags=[],
                metadata_mapping={},
                timeout_s=5,
                retry_policy={},
            ),
            actor="test",
        )
        form = edit_form(integration, config_url=fake.url + "/hook", test="1")
        response = as_role("owner").post(f"/integrations/{integration.pk}/edit", form)
    assert response.context["check"]["ok"] is True, response.context["check"]


def test_with_htmx_the_form_replaces_itself_and_a_save_redirects(as_role, team):
    client = as_role("admin")
    ok = client.post("/integrations/new/webhook", webhook_form(test="1"), HTTP_HX_REQUEST="true")
    text = ok.content.decode()
    assert text.lstrip().startswith("<form") and "Connection failed" in text and "<html" not in text
    bad = client.post("/integrations/new/webhook", webhook_form(config_url=""), HTTP_HX_REQUEST="true")
    assert bad.status_code == 400 and 'id="id_config_url_error"' in bad.content.decode()
    saved = client.post("/integrations/new/webhook", webhook_form(), HTTP_HX_REQUEST="true")
    assert saved["HX-Redirect"] == f"/integrations/{Integration.objects.get(team=team).pk}"
