from django.urls import path

from . import api

urlpatterns = [
    path("deliveries", api.DeliveryListView.as_view(), name="deliveries-list"),
    path("deliveries/replay", api.DeliveryBulkReplayView.as_view(), name="deliveries-replay-dead"),
    path("deliveries/<int:delivery_id>", api.DeliveryDetailView.as_view(), name="deliveries-detail"),
    path("deliveries/<int:delivery_id>/replay", api.DeliveryReplayView.as_view(), name="deliveries-replay"),
]
