"""Pseudonyms of e-mail, customer id and phone are keyed (SECRET_KEY), and survive its rotation.

A bare SHA-256 of a phone number is reversed by trying every number; an HMAC needs the key.
After `SECRET_KEY` is rotated, with the old one in `SECRET_KEY_FALLBACKS` as Django's docs ask
(https://docs.djangoproject.com/en/5.2/ref/settings/#secret-key-fallbacks), rows written
before the rotation must still be found by `customers/redact`.
"""

import hashlib
import json
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from automation.models import CheckoutState, Delivery, ReminderDecision
from automation.platform import claims
from automation.platform.pseudonyms import customer_id_ref, email_ref, phone_ref
from automation.reminders.checkouts import address_claim_key, address_claimed
from tests.privacy.test_privacy_topics import KUNDIN, OTHER, UNKNOWN_ID, order_body, redact_body
from tests.reminders.test_checkouts import checkout_body
from tests.support.signing import SHOP, post_shopify

pytestmark = pytest.mark.django_db(transaction=True)

OLD_KEY = "the-key-before-the-rotation"
NEW_KEY = "the-key-after-the-rotation"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_pseudonyms_are_no_bare_hashes_and_depend_on_the_key(settings):
    """Fails before: each was sha256 of its namespaced plain value."""
    settings.SECRET_KEY = OLD_KEY
    refs = (
        phone_ref(KUNDIN["phone"]),
        customer_id_ref(KUNDIN["id"]),
        email_ref(KUNDIN["email"]),
    )
    plain = ("phone:49401234567", f"shopify-customer:{KUNDIN['id']}", KUNDIN["email"])
    for ref, value in zip(refs, plain, strict=True):
        assert len(ref) == 64
        assert ref not in (sha(value), sha(value.split(":")[-1]))
    settings.SECRET_KEY = NEW_KEY
    assert phone_ref(KUNDIN["phone"]) != refs[0]
    assert customer_id_ref(KUNDIN["id"]) != refs[1]
    assert email_ref(KUNDIN["email"]) != refs[2]


@pytest.fixture
def written_under_the_old_key(client, run_worker, settings):
    """Both customers' checkouts and orders arrived while SECRET_KEY was the old one."""
    settings.SECRET_KEY = OLD_KEY
    settings.SECRET_KEY_FALLBACKS = []
    for customer, token, order_id in ((KUNDIN, "t-kundin", 450789469), (OTHER, "t-other", 7)):
        body = checkout_body(token=token, email=customer["email"], customer=dict(customer))
        post_shopify(client, body, topic="checkouts/update")
        run_worker()
        post_shopify(client, order_body(customer, order_id, token), topic="orders/create")
        run_worker()
    assert ReminderDecision.objects.count() == 2
    assert Delivery.objects.filter(body__isnull=False).count() == 4


@pytest.mark.parametrize(
    "customer",
    [{"id": KUNDIN["id"]}, {"id": UNKNOWN_ID, "phone": "+4940 123 4567"}],
    ids=["by-id", "by-phone"],
)
def test_customer_redact_after_a_key_rotation_finds_her_through_the_fallback(
    client, run_worker, settings, written_under_the_old_key, customer
):
    # Given SECRET_KEY was rotated, the old one kept as a fallback
    settings.SECRET_KEY = NEW_KEY
    settings.SECRET_KEY_FALLBACKS = [OLD_KEY]
    # When her erasure arrives, naming her id or only her phone
    post_shopify(client, redact_body(**customer), topic="customers/redact")
    run_worker()
    # Then her checkout, decision and bodies are gone, the other customer's stay
    redact = Delivery.objects.get(topic="customers/redact")
    assert redact.status == Delivery.Status.DONE, redact.last_error
    assert "2 bodies dropped" in redact.result
    assert list(CheckoutState.objects.values_list("token", flat=True)) == ["t-other"]
    kept = Delivery.objects.filter(body__isnull=False).exclude(topic="customers/redact")
    assert {json.loads(bytes(d.body))["customer"]["id"] for d in kept} == {OTHER["id"]}
    # And the request's own row keeps no pseudonym that could lead back to her
    assert (redact.customer_ref, redact.customer_id_ref, redact.phone_ref) == ("", "", "")


def test_without_the_fallback_the_old_rows_are_not_found(
    client, run_worker, settings, written_under_the_old_key
):
    """The rotation test above can fail: only the fallback key finds the old pseudonyms."""
    settings.SECRET_KEY = NEW_KEY
    settings.SECRET_KEY_FALLBACKS = []
    post_shopify(
        client, redact_body(id=UNKNOWN_ID, phone=KUNDIN["phone"]), topic="customers/redact"
    )
    run_worker()
    assert "0 bodies dropped" in Delivery.objects.get(topic="customers/redact").result


def test_the_frequency_cap_holds_across_a_key_rotation(settings):
    settings.SECRET_KEY = OLD_KEY
    assert claims.claim_once(address_claim_key(KUNDIN["email"]), timedelta(days=7))
    settings.SECRET_KEY = NEW_KEY
    settings.SECRET_KEY_FALLBACKS = [OLD_KEY]
    assert address_claimed(KUNDIN["email"])
    settings.SECRET_KEY_FALLBACKS = []
    assert not address_claimed(KUNDIN["email"])


# --- the migration: bare hashes are re-keyed from what we still hold, or dropped --------------

BEFORE, AFTER = ("automation", "0007_alert_slots"), ("automation", "0008_keyed_pseudonyms")


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return executor.loader.project_state([target]).apps


@pytest.fixture
def back_to_the_latest_schema():
    """The test leaves the schema at AFTER; later migrations would be missing for every later
    test on this database."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.usefixtures("back_to_the_latest_schema")
def test_the_migration_rekeys_what_a_body_still_names_and_drops_the_rest(settings):
    settings.SECRET_KEY = NEW_KEY
    old = migrate(BEFORE)
    Delivery = old.get_model("automation", "Delivery")
    CheckoutState = old.get_model("automation", "CheckoutState")
    Claim = old.get_model("automation", "Claim")
    legacy = {
        "customer_ref": sha(KUNDIN["email"]),
        "customer_id_ref": sha(f"shopify-customer:{KUNDIN['id']}"),
        "phone_ref": sha("phone:49401234567"),
    }
    body = json.dumps(order_body(KUNDIN, 450789469, "t-kundin")).encode()
    common = {"source": "shopify", "shop_domain": SHOP, **legacy}
    with_body = Delivery.objects.create(topic="orders/create", webhook_id="a", body=body, **common)
    erased = Delivery.objects.create(topic="customers/redact", webhook_id="b", body=None, **common)
    checkout = CheckoutState.objects.create(
        source="shopify",
        token="t-kundin",
        shop_domain=SHOP,
        email=KUNDIN["email"],
        customer_id_ref=legacy["customer_id_ref"],
        phone_ref=legacy["phone_ref"],
        updated_at="2026-11-26T10:00:00Z",
    )
    forgotten = CheckoutState.objects.create(
        source="shopify",
        token="t-gone",
        shop_domain=SHOP,
        customer_id_ref=sha("shopify-customer:42"),
        phone_ref=sha("phone:4930999999"),
        updated_at="2026-11-26T10:00:00Z",
    )
    now = "2026-11-26T10:00:00Z"
    Claim.objects.create(
        key=f"reminder-to:{legacy['customer_ref']}", created_at=now, expires_at=now
    )
    Claim.objects.create(
        key=f"reminder-to:{sha('gone@example.com')}", created_at=now, expires_at=now
    )

    new = migrate(AFTER)
    Delivery = new.get_model("automation", "Delivery")
    CheckoutState = new.get_model("automation", "CheckoutState")
    Claim = new.get_model("automation", "Claim")
    keyed = {
        "customer_ref": email_ref(KUNDIN["email"]),
        "customer_id_ref": customer_id_ref(KUNDIN["id"]),
        "phone_ref": phone_ref(KUNDIN["phone"]),
    }
    names = tuple(keyed)
    assert Delivery.objects.values_list(*names).get(pk=with_body.pk) == tuple(keyed.values())
    assert Delivery.objects.values_list(*names).get(pk=erased.pk) == ("", "", "")
    assert CheckoutState.objects.values_list(*names[1:]).get(pk=checkout.pk) == (
        keyed["customer_id_ref"],
        keyed["phone_ref"],
    )
    assert CheckoutState.objects.values_list(*names[1:]).get(pk=forgotten.pk) == ("", "")
    assert list(Claim.objects.values_list("key", flat=True)) == [address_claim_key(KUNDIN["email"])]
