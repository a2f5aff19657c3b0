from django.urls import path

from . import views

urlpatterns = [
    path("settings/prices/reprice", views.reprice_page, name="settings-reprice"),
]
