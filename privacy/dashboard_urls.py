from django.urls import path

from . import views

urlpatterns = [
    path("settings/privacy", views.privacy_settings, name="settings-privacy"),
    path("settings/privacy/save", views.privacy_settings_save, name="settings-privacy-save"),
    path("settings/privacy/try", views.privacy_try, name="settings-privacy-try"),
]
