"""Every text field a parser reads is cut before any cleaning reads it: a 300,000-letter name
or address costs no more than a short one, and what is kept has the field's bound."""

import pytest

from automation.intake.sources.checkout_version import FIRST_NAME_MAX_CHARS, plain_first_name
from automation.intake.sources.fields import MAX_FIELD_CHARS, PHONE_MAX_CHARS, raw_email
from automation.intake.sources.shopify_checkouts import parse_shopify_checkout
from automation.intake.sources.shopify_privacy import SHOP_DOMAIN_MAX_CHARS, parse_customer_redact
from automation.models import CheckoutState, Delivery
from automation.platform.exceptions import InvalidPayload
from tests.reminders.test_checkouts import checkout_body
from tests.support.signing import post_shopify

SHOP = "elbkerzen.myshopify.com"
HUGE = 300_000


def test_a_300000_letter_first_name_is_greeted_by_its_first_letters():
    body = checkout_body()
    body["customer"]["first_name"] = "a" * HUGE
    version = parse_shopify_checkout(body, SHOP)
    assert version.first_name == "a" * FIRST_NAME_MAX_CHARS


def test_the_name_cleaning_reads_only_the_start_of_the_field():
    """Whatever follows the part read does not reach the greeting."""
    assert plain_first_name("Kim" + " " * HUGE + "Lee") == "Kim"
    assert plain_first_name("Kim Lee") == "Kim Lee"


@pytest.mark.django_db(transaction=True)
def test_a_signed_checkout_with_a_300000_letter_name_is_stored_with_the_cut_name(
    client, run_worker
):
    body = checkout_body()
    body["customer"]["first_name"] = "Ä" * HUGE
    post_shopify(client, body, topic="checkouts/update")
    run_worker()
    assert Delivery.objects.get().status == Delivery.Status.DONE
    assert CheckoutState.objects.get().first_name == "Ä" * FIRST_NAME_MAX_CHARS


def test_an_address_field_is_cut_before_the_address_parsers_read_it():
    given = "x" * HUGE + "@example.org"
    assert raw_email(given, "email") == "x" * MAX_FIELD_CHARS
    body = checkout_body(email=given)
    version = parse_shopify_checkout(body, SHOP)
    assert (version.email, version.email_invalid) == ("", True)


def redact_body(**customer) -> dict:
    return {
        "shop_id": 954889,
        "shop_domain": SHOP,
        "customer": {"id": 191167, **customer},
        "orders_to_redact": [],
    }


def test_a_redaction_keeps_a_phone_of_its_bound_only():
    request = parse_customer_redact(redact_body(phone="5" * HUGE), SHOP)
    assert request.phone == "5" * PHONE_MAX_CHARS


def test_a_huge_shop_domain_is_refused_with_a_reason_of_bounded_length():
    body = redact_body()
    body["shop_domain"] = "x" * HUGE + ".myshopify.com"
    with pytest.raises(InvalidPayload) as refused:
        parse_customer_redact(body, SHOP)
    assert len(str(refused.value)) < SHOP_DOMAIN_MAX_CHARS + 200
