from django.urls import path

from . import api

urlpatterns = [
    path("policy", api.PiiPolicyView.as_view(), name="pii-policy"),
    path("scan", api.PiiScanView.as_view(), name="pii-scan"),
]
