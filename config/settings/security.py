"""Secrets, cookies, e-mail and outbound-request guards."""

from .base import DEBUG
from .env import env, public_url_setting

# Fernet key(s) for integration secrets; the first encrypts, all decrypt (rotation).
# Without one, a key is derived from SECRET_KEY so the embedded default works out of the box.
TRACERELAY_FERNET_KEYS = env.list("TRACERELAY_FERNET_KEYS", default=[])

# Dashboard sessions and CSRF (docs/dashboard.md). Cookies are Secure when the site is served over
# HTTPS (HTTPS=true, or each setting on its own); HttpOnly for both: htmx reads the CSRF token from
# the page, never from the cookie.
HTTPS = env.bool("HTTPS", default=False)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=14 * 24 * 3600)
CSRF_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG and HTTPS)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=SESSION_COOKIE_SECURE)
if env.bool("TRUST_X_FORWARDED_PROTO", default=False):
    # Only behind a reverse proxy that sets this header itself (and strips the client's).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Dashboard log-in throttling: this many failed attempts per (client IP, e-mail) within the window
# lock that pair out until the window ends; per IP alone, ten times as many.
TRACERELAY_LOGIN_MAX_FAILURES = env.int("TRACERELAY_LOGIN_MAX_FAILURES", default=5)
TRACERELAY_LOGIN_WINDOW_S = env.int("TRACERELAY_LOGIN_WINDOW_S", default=15 * 60)
# How long a team invitation link stays valid.
TRACERELAY_INVITE_TTL_S = env.int("TRACERELAY_INVITE_TTL_S", default=7 * 24 * 3600)
# How long a user token (the CLI's `tracerelay login`) stays valid; `tracerelay logout` revokes it sooner.
TRACERELAY_USER_TOKEN_TTL_S = env.int("TRACERELAY_USER_TOKEN_TTL_S", default=30 * 24 * 3600)
PASSWORD_RESET_TIMEOUT = env.int("PASSWORD_RESET_TIMEOUT", default=3 * 3600)

# Outgoing mail (password resets, invitations): the console by default; EMAIL_URL for SMTP, e.g.
# smtp+tls://user:password@smtp.example.com:587 (django-environ's email_url).
_email = env.email_url("EMAIL_URL", default="consolemail://")
EMAIL_BACKEND = _email["EMAIL_BACKEND"]
EMAIL_HOST = _email.get("EMAIL_HOST") or "localhost"
EMAIL_PORT = _email.get("EMAIL_PORT") or 25
EMAIL_HOST_USER = _email.get("EMAIL_HOST_USER") or ""
EMAIL_HOST_PASSWORD = _email.get("EMAIL_HOST_PASSWORD") or ""
EMAIL_USE_TLS = bool(_email.get("EMAIL_USE_TLS"))
EMAIL_USE_SSL = bool(_email.get("EMAIL_USE_SSL"))
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="tracerelay <noreply@localhost>")
# Where people reach the dashboard, for links in what is sent without a request to take the host
# from (alert and report e-mails): scheme, host, port and any path prefix. bin/run's address by default.
_served_at = f"http://127.0.0.1:{env.int('PORT', default=8000)}"
TRACERELAY_PUBLIC_URL = public_url_setting(
    "TRACERELAY_PUBLIC_URL", env.str("TRACERELAY_PUBLIC_URL", default=_served_at)
)

# Outbound destinations (webhooks, integration hosts): private and loopback ranges only when allowed.
TRACERELAY_ALLOW_PRIVATE_DESTINATIONS = env.bool("TRACERELAY_ALLOW_PRIVATE_DESTINATIONS", default=True)
