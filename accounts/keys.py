"""API key format: ``tr_<env>_<30 base62 random><6 base62 CRC32 checksum of everything before it>``.

The checksum lets a malformed or mistyped key be refused without touching the database
(the way GitHub's token format does). Keys are high-entropy, so a single SHA-256 is the right
hash for storage: a slow password hash would only cost every request a few milliseconds.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import zlib

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
ENV_PREFIXES = {"production": "prod", "development": "dev", "ci": "ci"}
PREFIX_ENVS = {v: k for k, v in ENV_PREFIXES.items()}
SECRET_LENGTH = 30
CHECKSUM_LENGTH = 6
KEY_RE = re.compile(rf"^tr_(prod|dev|ci)_([0-9A-Za-z]{{{SECRET_LENGTH + CHECKSUM_LENGTH}}})$")
DISPLAY_PREFIX_CHARS = 6  # characters of the secret kept in clear so people can tell keys apart


def _base62(number: int, width: int) -> str:
    chars = []
    for _ in range(width):
        number, rem = divmod(number, 62)
        chars.append(ALPHABET[rem])
    return "".join(reversed(chars))


def _checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode()), CHECKSUM_LENGTH)


def generate(environment: str) -> str:
    head = f"tr_{ENV_PREFIXES[environment]}_"
    body = "".join(secrets.choice(ALPHABET) for _ in range(SECRET_LENGTH))
    return f"{head}{body}{_checksum(head + body)}"


def parse(raw: str) -> str | None:
    """The key's environment when ``raw`` is well-formed with a valid checksum, else None."""
    match = KEY_RE.fullmatch(raw)
    if not match:
        return None
    tail = match.group(2)
    body, check = tail[:SECRET_LENGTH], tail[SECRET_LENGTH:]
    # The checksum covers the environment too: a key whose prefix was edited is malformed.
    if not secrets.compare_digest(_checksum(f"tr_{match.group(1)}_{body}"), check):
        return None
    return PREFIX_ENVS[match.group(1)]


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def display_prefix(raw: str) -> str:
    """What lists show of a key: its environment prefix and the first characters of the secret."""
    head = raw[: raw.index("_", 3) + 1]
    return raw[: len(head) + DISPLAY_PREFIX_CHARS]


# User tokens (`tracerelay login`): ``tru_<40 base62>``. Their own prefix, so the API tells a person's
# token from a team's key before any look-up.
USER_TOKEN_PREFIX = "tru_"
USER_TOKEN_RE = re.compile(r"^tru_[0-9A-Za-z]{40}$")


def generate_user_token() -> str:
    return USER_TOKEN_PREFIX + "".join(secrets.choice(ALPHABET) for _ in range(40))


def is_user_token(raw: str) -> bool:
    return raw.startswith(USER_TOKEN_PREFIX)
