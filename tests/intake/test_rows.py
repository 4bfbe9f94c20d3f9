"""rows.insert writes exactly the row Model.objects.create() would."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from automation.models import AdGroupAction, Delivery
from automation.platform import rows

pytestmark = pytest.mark.django_db(transaction=True)


VALUES = {
    "source": "shopify",
    "shop_domain": "elbkerzen.myshopify.com",
    "topic": "inventory_levels/update",
    "webhook_id": "w-1",
    "body": b'{"a": 1}',
}


def delivery(**overrides) -> int:
    return rows.insert(Delivery, **(VALUES | overrides))


def stored(model, pk: int) -> dict:
    row = model.objects.filter(pk=pk).values().get()
    row.pop("id")
    return row


def test_insert_writes_what_create_writes_defaults_and_auto_now_add_included():
    before = timezone.now()
    mine = delivery(webhook_id="mine")
    theirs = Delivery.objects.create(**(VALUES | {"webhook_id": "theirs"}))
    assert mine and mine != theirs.pk
    a, b = stored(Delivery, mine), stored(Delivery, theirs.pk)
    assert before <= a.pop("received_at") <= timezone.now()
    b.pop("received_at")
    assert a | {"webhook_id": "theirs"} == b
    assert bytes(a["body"]) == b'{"a": 1}'


def test_insert_keeps_foreign_keys_and_nulls():
    source = Delivery.objects.get(pk=delivery())
    fields = {
        "customer_id": "1234567890",
        "ad_group_id": "555",
        "desired_status": "PAUSED",
        "reason": "Winterzauber: 0 available ≤ 0",
        "source": "webhook",
        "result": "dry_run",
        "requested_at": timezone.now(),
    }
    by_instance = rows.insert(AdGroupAction, **fields, delivery=source)
    by_pk = rows.insert(AdGroupAction, **fields, delivery=source.pk)
    without = rows.insert(AdGroupAction, **fields, delivery=None)
    loaded = AdGroupAction.objects.in_bulk([by_instance, by_pk, without])
    assert loaded[by_instance].delivery_id == loaded[by_pk].delivery_id == source.pk
    assert loaded[without].delivery_id is None
    assert loaded[by_instance].applied_at is None and loaded[by_instance].error == ""


def test_insert_refuses_a_field_the_model_does_not_have():
    with pytest.raises(TypeError, match="webhook_idd"):
        delivery(webhook_idd="typo")
    assert not Delivery.objects.exists()


def test_insert_takes_a_given_time_over_auto_now_add():
    given = timezone.now() - timedelta(days=3)
    assert stored(Delivery, delivery(received_at=given))["received_at"] == given


def test_insert_raises_integrity_error_on_a_unique_conflict():
    delivery()
    with pytest.raises(IntegrityError), transaction.atomic():
        delivery()
    assert Delivery.objects.count() == 1


def test_load_builds_the_instance_the_orm_loads():
    pk = delivery(triggered_at=timezone.now() - timedelta(minutes=5), body=b'{"x": 1}')
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(Delivery)} FROM automation_delivery WHERE id = %s",  # noqa: S608
            [pk],
        )
        loaded = rows.load(Delivery, cursor.fetchone())
    orm = Delivery.objects.get(pk=pk)
    for field in Delivery._meta.concrete_fields:
        assert getattr(loaded, field.attname) == getattr(orm, field.attname), field.name
    assert type(loaded.received_at) is type(orm.received_at)
    assert loaded.received_at.tzinfo is not None
    assert not loaded._state.adding and loaded._state.db == connection.alias


def test_insert_is_seen_by_query_capture_and_execute_wrappers():
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        delivery(webhook_id="wrapped")
    with CaptureQueriesContext(connection) as captured:
        delivery(webhook_id="captured")
    assert any(sql.startswith('INSERT INTO "automation_delivery"') for sql in seen)
    assert [q["sql"] for q in captured if "automation_delivery" in q["sql"]]
    assert Delivery.objects.filter(webhook_id__in=["wrapped", "captured"]).count() == 2


def test_insert_refuses_to_run_in_a_broken_transaction_like_the_orm():
    delivery()
    with transaction.atomic():
        with pytest.raises(IntegrityError), transaction.atomic(savepoint=False):
            delivery()  # no savepoint to roll back to: the whole transaction is broken
        with pytest.raises(TransactionManagementError):
            delivery(webhook_id="after-the-error")
    assert list(Delivery.objects.values_list("webhook_id", flat=True)) == ["w-1"]


def test_execute_many_returns_each_runs_rows_in_order():
    """One statement per parameter set, each seeing the ones before (a batch's stock levels)."""
    first, second = delivery(webhook_id="a"), delivery(webhook_id="b")
    sql = "UPDATE automation_delivery SET attempts = attempts + 1 WHERE id = %s RETURNING attempts"
    assert rows.execute_many(sql, [[first], [first], [second], [0]]) == [[(1,)], [(2,)], [(1,)], []]
    assert rows.execute_many(sql, []) == []


def test_execute_many_runs_statements_without_rows_and_through_query_capture():
    pk = delivery()
    sql = "UPDATE automation_delivery SET attempts = %s WHERE id = %s"
    assert rows.execute_many(sql, [[3, pk], [4, pk]]) == [[], []]
    with CaptureQueriesContext(connection) as captured:
        assert rows.execute_many(sql, [[5, pk], [6, pk]]) == [[], []]
    assert len(captured) == 2  # logged queries go through Django's cursor, one by one
    assert Delivery.objects.get(pk=pk).attempts == 6


def test_execute_returns_no_rows_for_a_returning_statement_that_matched_none():
    sql = "UPDATE automation_delivery SET attempts = 1 WHERE id = %s RETURNING id, status"
    assert rows.execute(sql, [0]) == []
