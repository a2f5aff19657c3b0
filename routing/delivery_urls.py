from django.urls import path

from . import deliveries_api

urlpatterns = [
    path("deliveries", deliveries_api.DeliveryListView.as_view(), name="deliveries-list"),
    path("deliveries/replay", deliveries_api.DeliveryBulkReplayView.as_view(), name="deliveries-replay-dead"),
    path("deliveries/<int:delivery_id>", deliveries_api.DeliveryDetailView.as_view(), name="deliveries-detail"),
    path("deliveries/<int:delivery_id>/replay", deliveries_api.DeliveryReplayView.as_view(), name="deliveries-replay"),
]
