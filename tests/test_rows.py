"""rows.insert writes exactly the row Model.objects.create() would."""

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from automation import rows
from automation.models import AdGroupAction, Delivery

pytestmark = pytest.mark.django_db(transaction=True)


VALUES = {
    "source": "shopify",
    "shop_domain": "elbkerzen.myshopify.com",
    "topic": "inventory_levels/update",
    "webhook_id": "w-1",
    "body": b'{"a": 1}',
}


def delivery(**overrides) -> Delivery:
    return Delivery(**(VALUES | overrides))


def stored(instance) -> dict:
    row = type(instance).objects.filter(pk=instance.pk).values().get()
    row.pop("id")
    return row


def test_insert_writes_what_create_writes_defaults_and_auto_now_add_included():
    before = timezone.now()
    mine = rows.insert(delivery(webhook_id="mine"))
    theirs = Delivery.objects.create(**(VALUES | {"webhook_id": "theirs"}))
    assert mine.pk and mine.pk != theirs.pk
    assert not mine._state.adding and mine._state.db == connection.alias
    a, b = stored(mine), stored(theirs)
    assert before <= a.pop("received_at") <= timezone.now()
    b.pop("received_at")
    assert a | {"webhook_id": "theirs"} == b
    assert bytes(a["body"]) == b'{"a": 1}'


def test_insert_keeps_foreign_keys_and_nulls():
    source = rows.insert(delivery())
    action = rows.insert(
        AdGroupAction(
            customer_id="1234567890",
            ad_group_id="555",
            desired_status="PAUSED",
            reason="Winterzauber: 0 available ≤ 0",
            source="webhook",
            delivery=source,
            result="dry_run",
            requested_at=timezone.now(),
        )
    )
    loaded = AdGroupAction.objects.get(pk=action.pk)
    assert loaded.delivery_id == source.pk
    assert loaded.applied_at is None and loaded.error == ""


def test_insert_raises_integrity_error_on_a_unique_conflict():
    rows.insert(delivery())
    with pytest.raises(IntegrityError), transaction.atomic():
        rows.insert(delivery())
    assert Delivery.objects.count() == 1
