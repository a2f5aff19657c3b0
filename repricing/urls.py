from django.urls import path

from . import api

urlpatterns = [
    path("prices/reprice", api.RepriceCreate.as_view(), name="prices-reprice"),
    path("prices/reprice/<int:job_id>", api.RepriceDetail.as_view(), name="prices-reprice-detail"),
]
