from django.apps import AppConfig


class RepricingConfig(AppConfig):
    name = "repricing"
    verbose_name = "Re-pricing"
    default_auto_field = "django.db.models.BigAutoField"
