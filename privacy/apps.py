from django.apps import AppConfig


class PrivacyConfig(AppConfig):
    name = "privacy"
    verbose_name = "Privacy (PII policies)"
    default_auto_field = "django.db.models.BigAutoField"
