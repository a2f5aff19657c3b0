"""Encryption at rest for secrets (integration keys, upstream provider keys): Fernet, rotatable."""

from __future__ import annotations

import base64
import hashlib
import json
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


@lru_cache(maxsize=1)
def _fernet() -> MultiFernet:
    configured = list(settings.TRACERELAY_FERNET_KEYS)
    if not configured:
        # Embedded default: derive a stable key from SECRET_KEY so a fresh checkout works.
        configured = [base64.urlsafe_b64encode(hashlib.sha256(settings.SECRET_KEY.encode()).digest()).decode()]
    return MultiFernet([Fernet(k) for k in configured])


def encrypt_json(value: dict[str, Any]) -> str:
    if not value:
        return ""
    return _fernet().encrypt(json.dumps(value, separators=(",", ":")).encode()).decode()


def decrypt_json(token: str) -> dict[str, Any]:
    if not token:
        return {}
    try:
        return json.loads(_fernet().decrypt(token.encode()))
    except InvalidToken as exc:
        raise ValueError("secret cannot be decrypted: TRACERELAY_FERNET_KEYS does not hold its key") from exc


def mask(value: str) -> str:
    """What the API shows of a secret: enough to recognise it, never enough to use it."""
    return "****" + value[-4:] if len(value) > 8 else "****"
