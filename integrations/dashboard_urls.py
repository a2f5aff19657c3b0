from django.urls import path

from .views import backfill, editor, pages

urlpatterns = [
    path("integrations", pages.integration_list, name="integrations-page"),
    path("integrations/new", editor.integration_new, name="integrations-new"),
    path("integrations/new/<str:platform>", editor.integration_add, name="integrations-add"),
    path("integrations/<int:integration_id>", pages.integration_detail, name="integrations-detail"),
    path("integrations/<int:integration_id>/edit", editor.integration_edit, name="integrations-edit"),
    path("integrations/<int:integration_id>/test", pages.integration_check, name="integrations-check"),
    path("integrations/<int:integration_id>/toggle", pages.integration_toggle, name="integrations-toggle"),
    path("integrations/<int:integration_id>/delete", pages.integration_delete, name="integrations-delete"),
    path(
        "integrations/<int:integration_id>/dead-letters/replay",
        pages.dead_letters_replay_all,
        name="integrations-replay-all",
    ),
    path("integrations/<int:integration_id>/backfill", pages.backfill_new, name="integrations-backfill"),
    path("integrations/<int:integration_id>/backfills", backfill.backfill_jobs, name="integrations-backfills"),
    path(
        "integrations/<int:integration_id>/backfills/<int:backfill_id>/cancel",
        backfill.backfill_stop,
        name="integrations-backfill-cancel",
    ),
    path(
        "integrations/<int:integration_id>/deliveries/<int:delivery_id>/replay",
        pages.dead_letter_replay,
        name="integrations-replay",
    ),
]
