"""The first screen: the URL, the login and the API key, in a box printed once every process is up,
after their own banners, so it is the last thing on the screen."""

from __future__ import annotations

from typing import Any

MANAGE = ".venv/bin/python manage.py"
LOGIN_FIELD = "Username or e-mail"  # the log-in form's labels, word for word
PASSWORD_FIELD = "Password"
_UNICODE = ("╔", "═", "╗", "║", "╚", "╝")
_ASCII = ("+", "=", "+", "|", "+", "+")


def lines_of(made: dict[str, Any], *, data_dir: str, still_starting: list[str]) -> list[str]:
    """The box's lines; ``made`` is `manage.py bootstrap --json`'s answer."""
    url = made["url"]
    login = made.get("username") or "admin"
    email = made.get("email")
    out = ["tracerelay is running", ""]
    out.append(f"URL        {url}/")
    # In the log-in form's own words (accounts.forms.LoginForm, tests/runner/test_start.py checks).
    also = f"   (or {email})" if email else ""
    out.append(f"Log in     {url}/login")
    out.append(f"           {LOGIN_FIELD}   {login}{also}")
    if made.get("password"):
        out.append(f"           {PASSWORD_FIELD:<{len(LOGIN_FIELD)}}   {made['password']}")
    else:
        out.append(
            f"           {PASSWORD_FIELD:<{len(LOGIN_FIELD)}}   the one shown on the first start; to set another:"
        )
        out.append(f"           {'':<{len(LOGIN_FIELD)}}   {MANAGE} changepassword {login}")
    if made.get("key"):
        out.append(f"API key    {made['key']}")
        out.append(f'           (production, team "{made["team"]}"; shown this once: copy it now)')
    else:
        out.append(f"API keys   {made.get('active_keys', 0)} active; a key is shown only when made. Another one:")
        out.append(f"           {MANAGE} apikey create --team {made['team']} --environment production")
    out.append("")
    out.append(f"Next       open {url}/ : it shows how to send the first trace")
    out.append(f"Data       {data_dir}")
    out.append("Stop       Ctrl-C (everything stops; ./bin/run again picks up where it was)")
    if still_starting:
        out.append(f"Starting   {', '.join(still_starting)} (not ready yet: see its lines above)")
    return out


def render(lines: list[str], *, unicode: bool, color: bool) -> str:
    top_left, across, top_right, side, bottom_left, bottom_right = _UNICODE if unicode else _ASCII
    width = max(len(line) for line in lines) + 2
    rows = [top_left + across * width + top_right]
    rows += [f"{side} {line:<{width - 2}} {side}" for line in lines]
    rows.append(bottom_left + across * width + bottom_right)
    text = "\n".join(rows)
    if color:
        text = f"\033[1;32m{text}\033[0m"
    return "\n" + text + "\n\n"
