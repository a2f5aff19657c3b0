"""Secrets, cookies and outbound-request guards."""

from .base import DEBUG
from .env import env

# Fernet key(s) for integration secrets; the first encrypts, all decrypt (rotation).
# Without one, a key is derived from SECRET_KEY so the embedded default works out of the box.
TRACERELAY_FERNET_KEYS = env.list("TRACERELAY_FERNET_KEYS", default=[])

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG and env.bool("HTTPS", default=False))
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# Outbound destinations (webhooks, integration hosts): private and loopback ranges only when allowed.
TRACERELAY_ALLOW_PRIVATE_DESTINATIONS = env.bool("TRACERELAY_ALLOW_PRIVATE_DESTINATIONS", default=True)
