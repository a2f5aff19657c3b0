import pytest

from config.bulk import build_row
from delivery.models import Delivery, DeliveryStatus


def test_it_fills_fields_not_given_with_their_defaults():
    row = build_row(Delivery, {"destination": "langfuse"})
    assert (row.destination, row.status, row.attempts, row.spec) == ("langfuse", DeliveryStatus.PENDING, 0, {})


def test_it_refuses_a_name_that_is_not_a_field():
    with pytest.raises(TypeError, match="no fields \\['trace'\\]"):
        build_row(Delivery, {"trace": object()})  # the attname is trace_id


@pytest.mark.django_db
def test_insert_few_writes_its_rows_in_one_statement(team):
    from analytics.models import PendingBatch
    from config.bulk import insert_few
    from traces.models import _uuid7

    ids = [_uuid7(), _uuid7()]
    text = "{" + ",".join(i.hex for i in ids) + "}"
    insert_few(
        "analytics_pendingbatch",
        ["team_id", "trace_ids", "first_second", "last_second"],
        [(team.id, text, 1, 2), (team.id, "{}", 3, 4)],
        casts=("", "uuid[]", "", ""),
    )
    got = PendingBatch.objects.filter(team_id=team.id).order_by("first_second").values_list("trace_ids", "last_second")
    assert list(got) == [(ids, 2), ([], 4)]


def test_insert_few_refuses_casts_that_do_not_match_the_columns():
    from config.bulk import insert_few

    with pytest.raises(ValueError, match="2 columns but 1 casts"):
        insert_few("analytics_pendingbatch", ["team_id", "first_second"], [(1, 2)], casts=("",))
