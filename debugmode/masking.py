"""Masking for debug records: no secret leaves through what debug mode records.

Three layers, each applied to every URL, header and body recorded:

1. **Known values**: the destination's secret config fields (API keys, tokens, passwords, the
   webhook signing secret, credential-bearing custom headers) are replaced wherever they appear,
   also in their base64 and URL-encoded forms (a Basic auth header, a query string).
2. **By name**: headers and query parameters whose name says they carry a credential (the words
   of `integrations.exporters.configs.SENSITIVE_HEADER_WORDS`) keep their name and lose their value
   (an auth scheme such as ``Bearer`` is kept).
3. **By shape**: API keys and tokens the PII detector recognises (`SECRET`: OpenAI, Anthropic,
   AWS, GitHub, Slack, JWTs, private key blocks) in any body, e.g. a key pasted into a prompt.

Bodies are cut to `BODY_MAX_CHARS` (requests) and `RESPONSE_MAX_CHARS` (responses) after masking.
"""

from __future__ import annotations

import base64
import gzip
import zlib
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

from integrations.exporters.configs import is_sensitive_header
from privacy.detection import SECRET, scan

MASK = "[masked]"
BODY_MAX_CHARS = 8192
RESPONSE_MAX_CHARS = 2048
_CUT_MARGIN = 1024
_MIN_SECRET = 4  # shorter "secrets" would mask half the text and protect nothing
_SCHEMES = ("bearer ", "basic ", "token ", "apikey ", "dd-api-key ")


class Masker:
    """Masks the given secret values (and every form of them) plus anything secret by name or shape."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for value in secrets:
            if not isinstance(value, str) or len(value) < _MIN_SECRET:
                continue
            raw = value.encode()
            forms.update(
                {
                    value,
                    quote(value, safe=""),
                    quote_plus(value),
                    base64.b64encode(raw).decode().rstrip("="),
                    base64.urlsafe_b64encode(raw).decode().rstrip("="),
                }
            )
        # Longest first, so a secret that contains another is masked whole.
        self.forms = sorted((f for f in forms if len(f) >= _MIN_SECRET), key=len, reverse=True)

    def text(self, value: str) -> str:
        for form in self.forms:
            if form in value:
                value = value.replace(form, MASK)
        findings = scan(value, kinds=(SECRET,)) if len(value) >= 6 else []
        for finding in reversed(findings):
            value = value[: finding.start] + MASK + value[finding.end :]
        return value

    def header(self, name: str, value: str) -> str:
        if is_sensitive_header(name):
            lowered = value.lower()
            scheme = next((value[: len(s)] for s in _SCHEMES if lowered.startswith(s)), "")
            return scheme + MASK
        return self.text(value)

    def headers(self, headers: Iterable[tuple[str, str]]) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, value in headers:
            masked = self.header(name, value)
            out[name] = f"{out[name]}, {masked}" if name in out else masked
        return out

    def url(self, url: str) -> str:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:  # user:password@host
            netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, MASK if is_sensitive_header(k) else v) for k, v in pairs], safe="[]")
        return self.text(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))

    def body(self, content: bytes, headers: Mapping[str, str], limit: int) -> dict[str, Any]:
        """A body as recorded: its size, and its text masked and cut to ``limit`` characters
        (gzip/deflate undone; a binary body, e.g. protobuf, is described, not shown)."""
        size = len(content)
        encoding = (headers.get("content-encoding") or "").lower()
        try:
            if encoding == "gzip":
                content = gzip.decompress(content)
            elif encoding == "deflate":
                content = zlib.decompress(content)
        except (OSError, zlib.error, EOFError):
            return {"size": size, "text": None, "note": f"{encoding} body that does not decompress"}
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            kind = headers.get("content-type") or "binary"
            return {"size": size, "text": None, "note": f"binary body ({kind}), not shown"}
        # Masked before the final cut, with a margin: a secret cut in half would not be recognised.
        masked = self.text(text[: limit + _CUT_MARGIN])
        out: dict[str, Any] = {"size": size, "text": masked[:limit]}
        if len(masked) > limit or len(text) > limit + _CUT_MARGIN:
            out["truncated"] = True
        return out


def secret_values(config: Mapping[str, Any], secret_fields: Iterable[str]) -> list[str]:
    """The values of a destination's config that are secret: its secret fields and the values of
    credential-bearing custom headers."""
    values = [str(config[name]) for name in secret_fields if config.get(name)]
    headers = config.get("headers")
    if isinstance(headers, Mapping):
        values.extend(str(v) for k, v in headers.items() if is_sensitive_header(str(k)) and v)
    return values
