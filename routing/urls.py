from django.urls import path

from . import api

urlpatterns = [
    path("rules", api.RoutingRulesView.as_view(), name="routing-rules"),
    path("rules/<int:rule_id>", api.RoutingRuleDetailView.as_view(), name="routing-rule"),
    path("sampling", api.SamplingPolicyView.as_view(), name="routing-sampling"),
    path("test", api.RoutingTestView.as_view(), name="routing-test"),
]
