"""The client's side of a proxied call, read before anything is forwarded: its headers sorted once,
the upstream it asks for, its X-Service-* trace fields, and the one body rewrite (asking a stream
for usage). Plain functions over bytes: `app.py` runs them as the named steps of a call."""

from __future__ import annotations

import re
from collections.abc import Iterable

import orjson

from config.problems import Problem

from ..ids import CLIENT_ID_RE
from ..normalize import MAX_METADATA_KEY_LENGTH, MAX_RUN_ID, MAX_TAG_LENGTH, TEXT_LIMITS
from .capture import SERVER_METADATA_KEYS, Capture, endpoint_of
from .conf import ProxySettings
from .sse import UsageFilter
from .upstreams import ResolvedUpstream, TeamUpstreams

PREFIX = "/api/v1/proxy/"
_PREFIX_BYTES = PREFIX.encode()
# Never forwarded upstream: hop-by-hop headers, and ones aiohttp sets itself from the URL and body.
REQUEST_DROP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
        b"accept-encoding",  # replaced: we only ask for encodings the trace writer can read
        b"expect",
    }
)
CREDENTIAL_HEADERS = frozenset({b"authorization", b"x-api-key", b"api-key"})
_INJECTABLE = frozenset({"chat", "completions"})
# The REST API's rule for `run_id` (traces/normalize.py): it goes in a URL path, so no control
# characters and no "/".
_RUN_ID_BAD = re.compile(r"[\x00-\x1f\x7f/]")


class Incoming:
    """The request's headers, sorted in one pass: X-Service-* for us, the rest to forward."""

    __slots__ = ("service", "forward", "has_credentials", "accept_encoding", "content_type")

    def __init__(self, headers: Iterable[tuple[bytes, bytes]]) -> None:
        self.service: dict[bytes, bytes] = {}
        self.forward: list[tuple[str, str]] = []
        self.has_credentials = False
        self.accept_encoding = b""
        self.content_type = b""
        for name, value in headers:
            if name.startswith(b"x-service-"):
                self.service[name] = value
            elif name in REQUEST_DROP:
                if name == b"accept-encoding":
                    self.accept_encoding = value
            else:
                if name in CREDENTIAL_HEADERS:
                    self.has_credentials = True
                elif name == b"content-type":
                    self.content_type = value
                self.forward.append((name.decode("latin-1"), value.decode("latin-1")))

    @property
    def key(self) -> str:
        return self.service.get(b"x-service-key", b"").decode("latin-1").strip()


def choose_target(
    raw_path: bytes,
    service: dict[bytes, bytes],
    team: TeamUpstreams,
    builtin: tuple[ResolvedUpstream, ResolvedUpstream],
) -> tuple[ResolvedUpstream, bytes]:
    """Where to, and the path to ask it for: /u/<name>/..., /anthropic/..., X-Service-Upstream, else
    the team's default (the built-in OpenAI or Anthropic upstream when the team has none)."""
    rest = raw_path[len(_PREFIX_BYTES) :]
    openai, anthropic = builtin
    if rest.startswith(b"u/"):
        name, _, rest = rest[2:].partition(b"/")
        upstream = _named(team, name)
    elif rest.startswith(b"anthropic/"):
        rest = rest[10:]
        upstream = team.anthropic_default or anthropic
    elif b"x-service-upstream" in service:
        upstream = _named(team, service[b"x-service-upstream"].strip())
    else:
        upstream = team.default or openai
    if b".." in rest and b".." in rest.split(b"/"):
        raise Problem(400, "bad-path", "The proxied path may not contain '..' segments.")
    return upstream, rest


def _named(team: TeamUpstreams, name: bytes) -> ResolvedUpstream:
    upstream = team.by_name.get(name.decode("latin-1"))
    if upstream is None:
        raise Problem(404, "unknown-upstream", f"This team has no upstream named {name.decode()!r}.")
    return upstream


def read_service_headers(service: dict[bytes, bytes], capture: Capture, settings: ProxySettings) -> None:
    """Fill the capture from the X-Service-* headers; a 400 `Problem` naming the one that is invalid."""
    detail = _service_headers(service, capture, settings)
    if detail:
        raise Problem(400, "invalid-header", detail)


def _service_headers(service: dict[bytes, bytes], capture: Capture, settings: ProxySettings) -> str | None:
    raw = service.get(b"x-service-tags")
    if raw is not None:
        tags = [t.strip() for t in raw.decode("utf-8", "replace").split(",") if t.strip()]
        if len(tags) > settings.max_tags:
            return f"X-Service-Tags: at most {settings.max_tags} tags; got {len(tags)}."
        if any(len(t) > MAX_TAG_LENGTH for t in tags):
            return f"X-Service-Tags: each tag must be at most {MAX_TAG_LENGTH} characters."
        capture.tags = list(dict.fromkeys(tags))
    raw = service.get(b"x-service-metadata")
    if raw is not None:
        try:
            metadata = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            return f"X-Service-Metadata must be a JSON object: {exc}"
        if not isinstance(metadata, dict):
            return "X-Service-Metadata must be a JSON object."
        room = settings.max_metadata_keys - len(SERVER_METADATA_KEYS)  # the proxy's own keys always fit
        if len(metadata) > room:
            return f"X-Service-Metadata: at most {room} keys; got {len(metadata)}."
        reserved = sorted(SERVER_METADATA_KEYS.intersection(metadata))
        if reserved:
            return f"X-Service-Metadata: '{reserved[0]}' is written by tracerelay itself; use another key."
        if any(not key or len(key) > MAX_METADATA_KEY_LENGTH for key in metadata):
            return f"X-Service-Metadata: keys must be 1 to {MAX_METADATA_KEY_LENGTH} characters."
        capture.metadata = metadata
    for header, attribute in (
        (b"x-service-session-id", "session_id"),
        (b"x-service-user-id", "user_id"),
        (b"x-service-environment", "environment"),
    ):
        raw = service.get(header)
        if raw is not None:
            value = raw.decode("utf-8", "replace").strip()
            limit = TEXT_LIMITS[attribute]  # the trace pipeline's own limits: a header it would refuse is a 400 here
            if len(value) > limit:
                return f"{header.decode().title()}: at most {limit} characters."
            setattr(capture, attribute, value)
    return _run_headers(service, capture)


def _run_headers(service: dict[bytes, bytes], capture: Capture) -> str | None:
    """X-Service-Run-Id and X-Service-Parent-Id: the run the call joins and its parent span there,
    held to the REST API's rules for `run_id` and `parent_id` (docs/runs.md)."""
    raw_run = service.get(b"x-service-run-id")
    raw_parent = service.get(b"x-service-parent-id")
    if raw_run is not None:
        run_id = raw_run.decode("utf-8", "replace").strip()
        if not run_id:
            return "X-Service-Run-Id must not be empty."
        if len(run_id) > MAX_RUN_ID:
            return f"X-Service-Run-Id: at most {MAX_RUN_ID} characters; got {len(run_id)}."
        if _RUN_ID_BAD.search(run_id) or "\ufffd" in run_id:
            return 'X-Service-Run-Id must be text without control characters or "/".'
        capture.run_id = run_id
    if raw_parent is not None:
        parent_id = raw_parent.decode("latin-1").strip()
        if not CLIENT_ID_RE.match(parent_id):
            return "X-Service-Parent-Id must be the id of a span of the run: 1-128 characters of A-Z a-z 0-9 . _ : -"
        if raw_run is None:
            return "X-Service-Parent-Id needs X-Service-Run-Id: the run its parent span belongs to."
        capture.parent_id = parent_id
    return None


def prepare_stream(capture: Capture, body: bytes) -> tuple[bytes, UsageFilter | None, bool]:
    """(the body to send, the filter that hides injected usage or None, whether the answer streams).

    A streamed chat completion that does not ask for usage is rewritten to ask for it (the trace
    needs the token counts), and the filter takes the usage chunk out of the stream again."""
    if b'"stream"' not in body:
        return body, None, False
    if capture.target.is_anthropic:
        return body, None, b'"stream":true' in body or b'"stream": true' in body
    try:
        request_json = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body, None, False  # the upstream will say what is wrong with it
    if not isinstance(request_json, dict):
        return body, None, False
    capture.request_json = request_json  # saves the writer parsing it again
    if request_json.get("stream") is not True:
        return body, None, False
    options = request_json.get("stream_options")
    wants_usage = isinstance(options, dict) and options.get("include_usage") is True
    injectable = options is None or isinstance(options, dict)
    if wants_usage or not injectable or endpoint_of(capture.path, capture.target.kind) not in _INJECTABLE:
        return body, None, True
    capture.usage_injected = True
    body = orjson.dumps({**request_json, "stream_options": {**(options or {}), "include_usage": True}})
    return body, UsageFilter(), True
