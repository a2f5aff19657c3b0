from django.urls import path

from . import api

urlpatterns = [
    path("rules", api.RoutingRulesView.as_view(), name="routing-rules"),
    path("rules/<int:rule_id>", api.RoutingRuleDetailView.as_view(), name="routing-rule"),
    # <path:>: a service name may hold a slash (the SDK sends it percent-encoded).
    path("rules/services/<path:service_name>", api.ServiceRulesView.as_view(), name="routing-service-rules"),
    path("sampling", api.SamplingPolicyView.as_view(), name="routing-sampling"),
    path("test", api.RoutingTestView.as_view(), name="routing-test"),
]
