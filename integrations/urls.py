from django.urls import path

from . import api

urlpatterns = [
    path("integrations", api.IntegrationListCreate.as_view(), name="integrations"),
    path("integrations/test", api.ConfigTest.as_view(), name="integrations-test-config"),
    path("integrations/<int:integration_id>", api.IntegrationDetail.as_view(), name="integration"),
    path("integrations/<int:integration_id>/test", api.IntegrationTest.as_view(), name="integration-test"),
]
