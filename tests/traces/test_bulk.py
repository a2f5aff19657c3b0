import pytest

from config.bulk import build_row
from delivery.models import Delivery, DeliveryStatus


def test_it_fills_fields_not_given_with_their_defaults():
    row = build_row(Delivery, {"destination": "langfuse"})
    assert (row.destination, row.status, row.attempts, row.spec) == ("langfuse", DeliveryStatus.PENDING, 0, {})


def test_it_refuses_a_name_that_is_not_a_field():
    with pytest.raises(TypeError, match="no fields \\['trace'\\]"):
        build_row(Delivery, {"trace": object()})  # the attname is trace_id
