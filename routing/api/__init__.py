"""The routing API, one module per concern: the rule set and per-service rules (`rules`), the
sampling policy (`sampling`) and the dry run (`dry_run`). Views are thin: they read the body,
validate it with the serializers, call one service or selector and shape the answer (`common`)."""

from .dry_run import RoutingTestView
from .rules import RoutingRuleDetailView, RoutingRulesView, ServiceRulesView
from .sampling import SamplingPolicyView

__all__ = ["RoutingRuleDetailView", "RoutingRulesView", "RoutingTestView", "SamplingPolicyView", "ServiceRulesView"]
