"""The proxy's paths in the OpenAPI document.

The proxy is not a DRF view (config/asgi.py serves it before Django), so drf-spectacular cannot
see it; this post-processing hook (SPECTACULAR_SETTINGS, config/settings/proxy.py) describes it.
"""

from __future__ import annotations

from typing import Any

TAG = "Proxy"
SERVICE_HEADERS = [
    ("X-Service-Tags", "Comma-separated tags for the trace (at most 50)."),
    ("X-Service-Metadata", "A JSON object of metadata for the trace (at most 64 keys); bad JSON is a 400."),
    ("X-Service-Session-Id", "Session id stamped on the trace."),
    ("X-Service-User-Id", "End-user id stamped on the trace."),
    ("X-Service-Environment", "Environment name; defaults to the key's environment."),
    ("X-Service-Upstream", "Name of one of the team's upstreams (see /api/v1/upstreams)."),
    (
        "X-Service-Run-Id",
        "The run the call joins (the REST API's run_id: at most 128 characters, no control "
        "characters or '/'); without it the call is a run of its own.",
    ),
    (
        "X-Service-Parent-Id",
        "The id of the span of that run the call was made in (the REST API's parent_id: "
        "1-128 of A-Z a-z 0-9 . _ : -); needs X-Service-Run-Id.",
    ),
]
PROBLEMS = {
    "400": "Bad X-Service-* header or a '..' path segment; the upstream was not called.",
    "401": "Missing, malformed, unknown or revoked X-Service-Key; the upstream was not called.",
    "403": "The key may not use the proxy.",
    "404": "No upstream of that name in the team.",
    "413": "Request body over TRACERELAY_PROXY_MAX_BODY_BYTES.",
    "502": "The upstream could not be reached (traced).",
    "503": "Keys cannot be checked right now (database and cache both down, key not cached).",
    "504": "The upstream did not answer in time (traced).",
}


def _operation(summary: str, description: str, path_params: list[tuple[str, str]]) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}, "description": text}
        for name, text in path_params
    ]
    parameters += [
        {"name": name, "in": "header", "required": False, "schema": {"type": "string"}, "description": text}
        for name, text in SERVICE_HEADERS
    ]
    responses: dict[str, Any] = {
        "200": {
            "description": "The upstream's response, byte for byte (any status it returns is passed on: a 429 "
            "is traced as rate_limited with its rate-limit headers).",
            "headers": {
                "X-Service-ID": {"schema": {"type": "string"}, "description": "The trace id (on every response)."}
            },
            "content": {"application/json": {"schema": {}}, "text/event-stream": {"schema": {"type": "string"}}},
        }
    }
    for code, text in PROBLEMS.items():
        responses[code] = {
            "description": text,
            "headers": {"X-Service-ID": {"schema": {"type": "string"}}},
            "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
    return {
        "tags": [TAG],
        "summary": summary,
        "description": description,
        "parameters": parameters,
        "requestBody": {"required": False, "content": {"application/json": {"schema": {}}}},
        "responses": responses,
        "security": [{"ServiceKey": []}],
    }


def add_proxy_paths(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    path = ("path", "The provider's API path, e.g. `chat/completions`, `embeddings`, `responses`, `models`.")
    operations = {
        "/api/v1/proxy/{path}": _operation(
            "OpenAI-compatible proxy",
            "Forwards any method and path to the team's default upstream (OpenAI unless the team set one) or "
            "to the one named in X-Service-Upstream. Point an OpenAI SDK's base URL here. The client's "
            "Authorization goes upstream untouched. Every call becomes a trace. See docs/proxy.md.",
            [path],
        ),
        "/api/v1/proxy/anthropic/{path}": _operation(
            "Anthropic Messages API proxy",
            "Point an Anthropic SDK's base URL at `/api/v1/proxy/anthropic`: `v1/messages` goes to Anthropic "
            "(or the team's default Anthropic upstream).",
            [("path", "The Anthropic API path, e.g. `v1/messages`.")],
        ),
        "/api/v1/proxy/u/{upstream}/{path}": _operation(
            "Proxy to a named upstream",
            "Like /api/v1/proxy/{path}, to the team's upstream named in the path.",
            [("upstream", "The upstream's name."), path],
        ),
    }
    for url, operation in operations.items():
        result.setdefault("paths", {})[url] = {
            method: {**operation, "operationId": f"proxy_{url.count('/')}_{method}"}
            for method in ("get", "post", "put", "patch", "delete")
        }
    components = result.setdefault("components", {})
    components.setdefault("securitySchemes", {})["ServiceKey"] = {
        "type": "apiKey",
        "in": "header",
        "name": "X-Service-Key",
        "description": "A team API key (tr_prod_…, tr_dev_…, tr_ci_…).",
    }
    if "Problem" not in components.setdefault("schemas", {}):
        components["schemas"]["Problem"] = {"type": "object", "description": "RFC 9457 problem details."}
    tags = result.setdefault("tags", [])
    if not any(t.get("name") == TAG for t in tags):
        tags.append({"name": TAG, "description": "The OpenAI/Anthropic-compatible proxy (docs/proxy.md)."})
    return result
