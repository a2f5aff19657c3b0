"""What the routing API receives and sends.

Input validation is strict and all-or-nothing: every problem in a rule set is reported at once,
keyed by its path (``rules[2].condition``, ``rules[0].destinations[1].fallback[0].name``), and
nothing is stored unless everything is valid. Numbers must be JSON numbers and booleans JSON
booleans; unknown fields are refused (a typo such as ``sample-rate`` would otherwise be a rule that
silently samples nothing). The output-only fields a GET returns (``version``, ``created_at`` …)
may be sent back unchanged.
"""

from .dry_run import RoutingTestRequestSerializer, RoutingTestResponseSerializer
from .fields import MAX_RULES, MAX_TEST_TRACES, nul_paths
from .rules import (
    DestinationOutSerializer,
    RoutingRuleOutSerializer,
    RoutingRuleSerializer,
    RoutingRuleSetOutSerializer,
    RoutingRuleSetSerializer,
)
from .sampling import SamplingPolicyOutSerializer, SamplingPolicySerializer

__all__ = [
    "MAX_RULES",
    "MAX_TEST_TRACES",
    "DestinationOutSerializer",
    "RoutingRuleOutSerializer",
    "RoutingRuleSerializer",
    "RoutingRuleSetOutSerializer",
    "RoutingRuleSetSerializer",
    "RoutingTestRequestSerializer",
    "RoutingTestResponseSerializer",
    "SamplingPolicyOutSerializer",
    "SamplingPolicySerializer",
    "nul_paths",
]
