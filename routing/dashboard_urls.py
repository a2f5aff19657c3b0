"""The routing pages of the dashboard (`/routing…`); the API's are in routing/urls.py."""

from django.urls import path

from .views import rules, sampling, test, trial

urlpatterns = [
    path("routing", rules.routing_rules, name="routing-page"),
    path("routing/rules/new", rules.rule_new, name="routing-rule-new"),
    path("routing/rules/new/test", trial.rule_try, name="routing-rule-new-test"),
    path("routing/rules/check", rules.condition_check, name="routing-condition-check"),
    path("routing/rules/<int:rule_id>", rules.rule_edit, name="routing-rule-edit"),
    path("routing/rules/<int:rule_id>/test", trial.rule_try, name="routing-rule-test"),
    path("routing/rules/<int:rule_id>/move", rules.rule_move, name="routing-rule-move"),
    path("routing/rules/<int:rule_id>/toggle", rules.rule_toggle, name="routing-rule-toggle"),
    path("routing/rules/<int:rule_id>/delete", rules.rule_delete, name="routing-rule-delete"),
    path("routing/test", test.routing_test, name="routing-test-page"),
    path("routing/sampling", sampling.sampling_policy, name="routing-sampling-page"),
]
