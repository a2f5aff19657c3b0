from django.contrib import admin
from django.contrib.staticfiles.views import serve as staticfiles_serve
from django.urls import URLPattern, URLResolver, include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from analytics.metrics_view import metrics_endpoint
from config import health
from traces.views import home

handler400 = "config.problems.handler400"
handler403 = "config.problems.handler403"
handler404 = "config.problems.handler404"
handler500 = "config.problems.handler500"

api_v1: list[URLPattern | URLResolver] = [
    path("", include("repricing.urls")),  # before any include that could match prices/...
    path("", include("traces.urls")),
    path("", include("traces.runs.urls")),
    path("", include("delivery.urls")),
    path("routing/", include("routing.urls")),
    path("pii/", include("privacy.urls")),
    path("", include("integrations.urls")),
    path("", include("traces.proxy.urls")),
    path("", include("traces.prices.urls")),
    path("", include("analytics.urls")),
    path("", include("reports.urls")),
    path("", include("alerts.urls")),
    path("", include("dashboards.urls")),
    path("", include("traces.otlp.urls")),
    path("", include("accounts.api_urls")),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
]

admin.site.site_header = "tracerelay administration"
admin.site.site_title = "tracerelay admin"
admin.site.index_title = "Teams, traces, routing and deliveries"
admin.site.enable_nav_sidebar = False  # the lists get the page's width (the home page lists every model)

urlpatterns = [
    # Static files for the admin and dashboard, from the app folders (no collectstatic needed). Behind
    # a CDN or reverse proxy in big deployments; here so one process serves everything.
    re_path(r"^static/(?P<path>.*)$", staticfiles_serve, {"insecure": True}),
    path("admin/", admin.site.urls),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics_endpoint, name="metrics"),
    path("api/v1/", include(api_v1)),
    path("", include("traces.root_urls")),
    # The dashboard: accounts and settings pages (docs/dashboard.md), and its home.
    path("", include("accounts.urls")),
    path("", include("privacy.dashboard_urls")),
    path("", include("analytics.dashboard_urls")),
    path("", include("reports.dashboard_urls")),
    path("", include("alerts.dashboard_urls")),
    path("", include("repricing.dashboard_urls")),
    path("", include("dashboards.dashboard_urls")),
    path("", include("routing.dashboard_urls")),
    path("", include("integrations.dashboard_urls")),
    path("", include("diagnostics.urls")),
    path("", home, name="home"),
]
