from django.urls import path

from . import views

urlpatterns = [
    path("otlp/v1/traces", views.otlp_traces, name="otlp-traces"),
]
