from django.urls import path

from . import views

urlpatterns = [
    path("dashboards", views.dashboard_list, name="dashboards"),
    path("dashboards/new", views.dashboard_new, name="dashboard-new"),
    path("dashboards/<int:dashboard_id>", views.dashboard_detail, name="dashboard-detail"),
    path("dashboards/<int:dashboard_id>/rename", views.dashboard_rename, name="dashboard-rename"),
    path("dashboards/<int:dashboard_id>/duplicate", views.dashboard_duplicate, name="dashboard-duplicate"),
    path("dashboards/<int:dashboard_id>/delete", views.dashboard_delete, name="dashboard-delete"),
    path("dashboards/<int:dashboard_id>/widgets/new", views.widget_new, name="widget-new"),
    path("dashboards/<int:dashboard_id>/widgets/<int:index>/edit", views.widget_edit, name="widget-edit"),
    path(
        "dashboards/<int:dashboard_id>/widgets/<int:index>/<str:action>",
        views.widget_action,
        name="widget-action",
    ),
]
