"""What every command needs: the server's URL, the stored credentials, and HTTP with problem+json errors.

The standard library only (urllib), like the SDK: installing the CLI adds nothing to an application.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from .._config import DEFAULT_BASE_URL

USER_AGENT = f"tracerelay-cli/{__version__}"
TIMEOUT = 30.0

# Exit codes (docs/cli.md): one per kind of failure, so a script can tell them apart.
OK = 0
ERROR = 1  # the server failed (5xx) or answered something unexpected
USAGE = 2  # a bad command line or local input (argparse's own code too)
NOT_LOGGED_IN = 3  # no credentials, or the server refused them (401)
FORBIDDEN = 4  # the role or the key's scope does not allow it (403)
NOT_FOUND = 5  # no such team, key or trace (404)
INVALID = 6  # the server refused the input (400, 409, 412, 413, 415)
UNREACHABLE = 7  # no answer from the server (refused, timeout, DNS)
THROTTLED = 8  # too many attempts (429): wait Retry-After seconds
INTERRUPTED = 130  # Ctrl-C (except in `traces tail`, where it is the normal way out: 0)


class CliError(Exception):
    """A failure to report on stderr (and as JSON on stdout with --json), with its exit code."""

    def __init__(self, message: str, code: int = ERROR, *, problem: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.problem = problem


def _status_code(status: int) -> int:
    if status == 401:
        return NOT_LOGGED_IN
    if status == 403:
        return FORBIDDEN
    if status == 404:
        return NOT_FOUND
    if status == 429:
        return THROTTLED
    if 400 <= status < 500:
        return INVALID
    return ERROR


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "tracerelay"


def credentials_path() -> Path:
    return config_dir() / "credentials.json"


def load_credentials() -> dict[str, Any] | None:
    path = credentials_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CliError(f"Cannot read {path}: {exc}. Log in again (tracerelay login).", NOT_LOGGED_IN) from None
    return data if isinstance(data, dict) and data.get("token") else None


def save_credentials(data: dict[str, Any]) -> Path:
    """Write the credentials readable by this user only: the directory 0700, the file 0600, atomically."""
    directory = config_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    path = credentials_path()
    temporary = directory / f".credentials.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.write("\n")
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def delete_credentials() -> bool:
    try:
        credentials_path().unlink()
    except FileNotFoundError:
        return False
    return True


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class Session:
    """One command's view of the server: its URL, and the user token stored for it (if any)."""

    def __init__(self, base_url: str | None, team: str | None = None) -> None:
        self.unreadable: CliError | None = None
        try:
            self.credentials = load_credentials()
        except CliError as error:  # signup and login still work (and replace the file)
            self.credentials, self.unreadable = None, error
        stored_url = (self.credentials or {}).get("base_url")
        url = base_url or os.environ.get("TRACERELAY_BASE_URL") or stored_url or DEFAULT_BASE_URL
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CliError(f"The server's URL must be http(s)://host[:port], not {url!r}.", USAGE)
        self.base_url = url.rstrip("/")
        self.team = team or os.environ.get("TRACERELAY_TEAM") or None

    # --- credentials ------------------------------------------------------------------------------------

    def token(self) -> str:
        """The stored token, only for the server it was issued by (never sent to another one)."""
        creds = self.credentials
        if self.unreadable is not None:
            raise self.unreadable
        if creds is None:
            raise CliError(f"Not logged in. Run: tracerelay login --base-url {self.base_url}", NOT_LOGGED_IN)
        if creds.get("base_url", "").rstrip("/") != self.base_url:
            raise CliError(
                f"Logged in to {creds.get('base_url')}, not {self.base_url}. Run: tracerelay login --base-url "
                f"{self.base_url}",
                NOT_LOGGED_IN,
            )
        return str(creds["token"])

    def team_id(self) -> int:
        """The team the command acts in: --team / TRACERELAY_TEAM (an id or a name), else the stored one."""
        wanted = self.team
        if wanted is None:
            stored = (self.credentials or {}).get("team_id")
            if stored is None:
                raise CliError("No team chosen: pass --team <id or name> (tracerelay teams lists yours).", USAGE)
            return int(stored)
        if wanted.isdigit():
            return int(wanted)
        teams = self.call("GET", "/api/v1/teams").body.get("data", [])
        matches = [t for t in teams if t["name"].lower() == wanted.lower()]
        if not matches:
            raise CliError(f"You are in no team named {wanted!r} (tracerelay teams lists yours).", NOT_FOUND)
        return int(matches[0]["id"])

    # --- HTTP -------------------------------------------------------------------------------------------

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: list[tuple[str, str]] | None = None,
        auth: bool = True,
        team: bool = False,
        ok: tuple[int, ...] = (200, 201, 204),
    ) -> Answer:
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if auth:
            headers["Authorization"] = f"Bearer {self.token()}"
        if team:
            headers["X-Team"] = str(self.team_id())
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        url = self.base_url + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                answer = Answer(response.status, _parse(response.read()), dict(response.headers.items()))
        except urllib.error.HTTPError as error:
            answer = Answer(error.code, _parse(error.read()), dict(error.headers.items()))
        except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise CliError(f"Cannot reach {self.base_url}: {reason}.", UNREACHABLE) from None
        if answer.status not in ok:
            raise _failure(answer)
        return answer


def _parse(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return {"detail": raw[:300].decode("utf-8", "replace")}


def _failure(answer: Answer) -> CliError:
    body = answer.body if isinstance(answer.body, dict) else {}
    detail = body.get("detail") or body.get("title") or f"HTTP {answer.status}"
    lines = [f"{detail} (HTTP {answer.status})"]
    errors = body.get("errors")
    if isinstance(errors, dict):
        for name, messages in list(errors.items())[:20]:
            for message in messages if isinstance(messages, list) else [messages]:
                lines.append(f"  {name or 'body'}: {message}")
    if answer.status == 401 and body.get("type", "").endswith(("invalid-token", "unauthorized")):
        lines.append("Log in again: tracerelay login")
    return CliError("\n".join(lines), _status_code(answer.status), problem=body or None)


def stderr(message: str) -> None:
    print(message, file=sys.stderr)
