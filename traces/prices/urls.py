from django.urls import path

from . import api

urlpatterns = [
    path("prices", api.PriceListCreate.as_view(), name="prices"),
    # <int:…>: `prices/reprice` (the re-pricing jobs) is never taken for a price's id.
    path("prices/<int:price_id>", api.PriceDetail.as_view(), name="price"),
]
