from django.urls import path

from . import views

urlpatterns = [
    path("alerts", views.alert_list, name="alerts"),
    path("alerts/new", views.alert_new, name="alert-new"),
    path("alerts/<int:alert_id>", views.alert_detail, name="alert-detail"),
    path("alerts/<int:alert_id>/edit", views.alert_edit, name="alert-edit"),
    path("alerts/<int:alert_id>/toggle", views.alert_toggle, name="alert-toggle"),
    path("alerts/<int:alert_id>/delete", views.alert_delete, name="alert-delete"),
]
