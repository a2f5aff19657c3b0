from django.urls import path

from . import api
from .backfill import api as backfill_api

urlpatterns = [
    path("deliveries", api.DeliveryListView.as_view(), name="deliveries-list"),
    path("deliveries/replay", api.DeliveryBulkReplayView.as_view(), name="deliveries-replay-dead"),
    path("deliveries/<int:delivery_id>", api.DeliveryDetailView.as_view(), name="deliveries-detail"),
    path("deliveries/<int:delivery_id>/replay", api.DeliveryReplayView.as_view(), name="deliveries-replay"),
    path("integrations/<int:integration_id>/backfill", backfill_api.BackfillStart.as_view(), name="backfill-start"),
    path("integrations/<int:integration_id>/backfills", backfill_api.BackfillList.as_view(), name="backfill-list"),
    path("backfills/<int:backfill_id>", backfill_api.BackfillDetail.as_view(), name="backfill-detail"),
]
