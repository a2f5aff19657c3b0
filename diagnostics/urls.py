from django.urls import path

from . import views

urlpatterns = [
    path("settings/advanced", views.advanced_settings, name="settings-advanced"),
    path("settings/advanced/debug", views.debug_mode_save, name="settings-advanced-debug"),
    path("settings/advanced/bundle", views.diagnostic_bundle, name="settings-advanced-bundle"),
]
