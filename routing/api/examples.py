"""The OpenAPI examples of the routing API (request and response bodies)."""

from __future__ import annotations

RULES_EXAMPLE = {
    "rules": [
        {
            "name": "errors everywhere",
            "priority": 10,
            "conditions": {"error": True},
            "destinations": [
                {"name": "langfuse", "fallback": [{"name": "webhook", "url": "https://hooks.example.com/llm"}]},
                "datadog",
            ],
        },
        {
            "name": "expensive gpt-4",
            "priority": 20,
            "condition": 'model.startsWith("gpt-4") && cost > 0.05',
            "destination": "langsmith",
            "tags": ["expensive"],
        },
        {
            "name": "10% of the rest",
            "priority": 100,
            "destinations": [{"platform": "helicone", "sample_rate": 0.1}],
        },
    ]
}
RULES_OUT_EXAMPLE = {
    "version": 4,
    "updated_at": "2025-01-31T12:00:00Z",
    "updated_by": "key:tr_prod_AbC1",
    "rules": [
        {
            "id": 7,
            "name": "errors everywhere",
            "description": "",
            "priority": 10,
            "enabled": True,
            "conditions": {"error": True},
            "condition": None,
            "destinations": [
                {
                    "name": "langfuse",
                    "sample_rate": 1.0,
                    "tags": [],
                    "fallback": [
                        {"name": "webhook", "sample_rate": 1.0, "tags": [], "url": "https://hooks.example.com/llm"}
                    ],
                }
            ],
            "sample_rate": 1.0,
            "tags": [],
            "stop": False,
            "service": None,
            "created_at": "2025-01-30T09:00:00Z",
            "updated_at": "2025-01-31T12:00:00Z",
        }
    ],
}
BAD_RULES_EXAMPLE = {
    "type": "https://tracerelay.dev/problems/validation",
    "title": "Invalid routing rules",
    "status": 400,
    "detail": "Rule 'expensive gpt-4' (rules[1].condition): Syntax error at column 20: the expression ends too early",
    "errors": {
        "rules[1].condition": ["Syntax error at column 20: the expression ends too early"],
        "rules[2].destinations[0].name": [
            "Unknown destination 'helicon': not an integration name or platform of this team. Did you mean "
            "'helicone'? Known: helicone, langfuse, webhook."
        ],
    },
}
SERVICE_RULES_EXAMPLE = {
    "rules": [
        {"name": "checkout errors", "conditions": {"error": True}, "destination": "langfuse"},
        {"name": "checkout sample", "destinations": [{"name": "webhook", "sample_rate": 0.1}]},
    ]
}
