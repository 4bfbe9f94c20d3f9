"""customers/redact finds a customer's rows by the address's key, whatever its spelling.

Checkouts and decisions store the normalised address (`Kim@xn--bcher-kva.de`), the raw bodies
its pseudonym; Shopify's redaction may name the same mailbox with the domain in Unicode, in
another case, or with a quoted local part (automation/platform/addresses.py).
"""

import pytest

from automation.models import CheckoutState, Delivery, ReminderDecision
from automation.platform.pseudonyms import email_ref
from tests.privacy.test_privacy_topics import UNKNOWN_ID, redact_body
from tests.reminders.test_checkouts import checkout_body
from tests.support.signing import post_shopify

pytestmark = pytest.mark.django_db(transaction=True)

KIM = {"id": 603851970716743426, "email": "Kim@Bücher.de"}
OTHER = {"id": 207119551, "email": "other@bücher.de"}


@pytest.fixture
def kim_and_other(client, run_worker):
    """Each has a checkout, decided, under the spelling the buyer typed."""
    for customer, token in ((KIM, "t-kim"), (OTHER, "t-other")):
        body = checkout_body(token=token, email=customer["email"], customer=dict(customer))
        post_shopify(client, body, topic="checkouts/update")
    run_worker()
    assert sorted(CheckoutState.objects.values_list("email", flat=True)) == [
        "Kim@xn--bcher-kva.de",
        "other@xn--bcher-kva.de",
    ]
    assert ReminderDecision.objects.count() == 2


@pytest.mark.parametrize(
    "spelling",
    ["kim@bücher.de", '"kim"@xn--bcher-kva.de', "KIM@XN--BCHER-KVA.DE"],
    ids=["unicode-domain", "quoted-local-part", "upper-case"],
)
def test_customer_redact_finds_the_customer_under_another_spelling(
    client, run_worker, kim_and_other, spelling
):
    """Fails before: the address was compared as text, so the IDN and quoted spellings
    (and the body's pseudonym of them) matched nothing; only the customer id could."""
    post_shopify(client, redact_body(id=UNKNOWN_ID, email=spelling), topic="customers/redact")
    run_worker()

    redact = Delivery.objects.get(topic="customers/redact")
    assert redact.status == Delivery.Status.DONE, redact.last_error
    assert list(CheckoutState.objects.values_list("token", flat=True)) == ["t-other"]
    assert list(ReminderDecision.objects.values_list("email", flat=True)) == [
        "other@xn--bcher-kva.de"
    ]
    checkouts = Delivery.objects.filter(topic="checkouts/update")
    assert [d.body is None for d in checkouts.order_by("pk")] == [True, False]


@pytest.mark.parametrize(
    "spelling",
    ["Kim@Bücher.de", "kim@xn--bcher-kva.de", '"kim"@bücher.de', " KIM@bücher.DE "],
)
def test_every_spelling_of_one_mailbox_has_one_pseudonym(spelling):
    assert email_ref(spelling) == email_ref("kim@xn--bcher-kva.de")


def test_pseudonym_of_text_that_is_no_address_is_its_lower_case():
    assert email_ref("Not An Address") == email_ref("not an address")
    assert email_ref("kim@bücher.de") != email_ref("kim@buecher.de")
