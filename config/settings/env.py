"""The one place that reads the environment (django-environ), shared by the settings modules."""

import os
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent

_TRUE = frozenset({"1", "true", "yes", "on", "y", "t"})
_FALSE = frozenset({"0", "false", "no", "off", "n", "f", ""})


class StrictEnv(environ.Env):
    """django-environ, except that a boolean it does not recognise stops the start.

    environ reads any unknown word as False, so ``DEBUG=ture`` or ``HTTPS=yes please`` would be
    switched off in silence; here they are refused with the variable named (as healthchecks' envbool).
    """

    def bool(self, var: str, default: Any = environ.Env.NOTSET) -> bool:  # type: ignore[override]
        raw = self.ENVIRON.get(var)
        if raw is None:
            return bool(super().bool(var, default=default))
        text = str(raw).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ImproperlyConfigured(f"{var}={raw!r} is not a boolean: use true/false, 1/0, yes/no or on/off.")


env = StrictEnv()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# The data folder: the embedded Postgres and Valkey (config/embedded.py), the secret key, the proxy's
# spool. A relative path is taken from the checkout, wherever a command runs from.
DATA_DIR = Path(os.path.abspath(BASE_DIR / env.str("TRACERELAY_DATA_DIR", default="data")))


def data_secret_key() -> str:
    """The embedded default's SECRET_KEY: made once per data folder, kept in it (mode 600).

    Production sets SECRET_KEY. The key also derives the Fernet key for integration secrets when
    TRACERELAY_FERNET_KEYS is unset, so it must stay the same across restarts: hence the file.
    """
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = DATA_DIR / "secret_key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):  # another process is writing it right now
            value = path.read_text().strip()
            if value:
                return value
            time.sleep(0.02)
        raise RuntimeError(f"{path} is empty: delete it or set SECRET_KEY")
    value = secrets.token_urlsafe(50)
    with os.fdopen(fd, "w") as handle:
        handle.write(value)
    return value


def public_url_setting(var: str, value: str) -> str:
    """An absolute http(s) URL people open (no query, fragment or credentials), without its trailing
    slash; anything else stops the start with the variable named."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment or parts.username:
        raise ImproperlyConfigured(
            f"{var}={value!r} is not the dashboard's address: write it as https://host[:port][/path]."
        )
    try:
        parts.port  # noqa: B018 (a port that is no number raises here)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{var}={value!r}: {exc}.") from exc
    return value.strip().rstrip("/")
