"""Only a link to the shop's own checkout goes into a reminder; the name in it is plain text.

Given a signed checkout whose `abandoned_checkout_url` was `javascript:alert(1)`, the link went
into the HTML part unchecked, and a `first_name` with markup and a URL was greeted verbatim.
"""

import pytest
from django.core import mail

from automation.intake.sources import shopify_checkouts
from automation.intake.sources.checkout_version import FIRST_NAME_MAX_CHARS, plain_first_name
from automation.models import CheckoutState, ReminderDecision
from automation.reminders.checkouts import STRIPE_CHECKOUT_HOSTS, recovery_link_problem
from tests.reminders.test_checkouts import checkout_body, shop, stripe_expired  # noqa: F401 (shop: a fixture, used by name)
from tests.support.signing import SHOP, post_shopify, post_stripe

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("shop"),
    pytest.mark.usefixtures("not_bought"),
]

KEY = "b8f1c2e3d4a5f6e7"  # the recovery link's secret: never in a reason
SHOP_LINK = f"https://{SHOP}/60673655038/checkouts/ac/c1/recover?key={KEY}"


def _decision() -> ReminderDecision:
    (decision,) = ReminderDecision.objects.all()
    return decision


def _send(client, run_worker, **changes) -> None:
    post_shopify(client, checkout_body(**changes), topic="checkouts/update")
    run_worker()


@pytest.mark.parametrize(
    ("link", "why"),
    [
        ("javascript:alert(1)", "javascript: is not https"),
        ("JavaScript:alert(document.cookie)//https://elbkerzen.myshopify.com/", "javascript:"),
        ("data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", "data: is not https"),
        (f"http://{SHOP}/60673655038/checkouts/ac/c1/recover?key={KEY}", "http: is not https"),
        (f"//{SHOP}/checkouts/ac/c1/recover?key={KEY}", "not an https link"),
        (f"https://evil.example/checkouts/ac/c1/recover?key={KEY}", "host evil.example"),
        (f"https://{SHOP}.evil.example/c?key={KEY}", f"host {SHOP}.evil.example"),
        (f"https://{SHOP}@evil.example/c?key={KEY}", "a user name before the host"),
        (f"https://{SHOP}\\@evil.example/c?key={KEY}", "characters a link does not have"),
        (f"https://{SHOP}:8443/c?key={KEY}", "port 8443"),
        (f"https://{SHOP}:99999/c?key={KEY}", "not a URL"),
        (f"https://{SHOP}./c?key={KEY}", f"host {SHOP}."),
        (f"https://elbkerzen.myshopify.com\u2024evil.example/c?key={KEY}", "characters"),
        (f"https://{SHOP}/c?key={KEY}\n<script>", "characters a link does not have"),
        ("https:///evil.example/c", "no host"),
    ],
)
def test_a_link_elsewhere_is_never_mailed_and_the_reason_says_why(client, run_worker, link, why):
    _send(client, run_worker, abandoned_checkout_url=link)
    assert not mail.outbox
    decision = _decision()
    reason = decision.reason
    assert decision.reason_note["code"] == "recovery_link_not_allowed"
    assert reason.startswith("recovery link not allowed: ")
    assert why in reason
    assert KEY not in reason  # the link's secret opens the buyer's checkout


@pytest.mark.parametrize(
    "link",
    [
        SHOP_LINK,
        f"https://ELBKERZEN.myshopify.com/60673655038/checkouts/ac/c1/recover?key={KEY}",
        f"https://{SHOP}:443/60673655038/checkouts/ac/c1/recover?key={KEY}",
        f"https://checkout.shopify.com/60673655038/checkouts/c1?key={KEY}",  # before July 2017
    ],
)
def test_a_link_to_the_shops_checkout_is_mailed_in_both_parts(client, run_worker, link):
    _send(client, run_worker, abandoned_checkout_url=link)
    (message,) = mail.outbox
    assert link in message.body
    assert link.replace("&", "&amp;") in message.alternatives[0][0]


def test_the_shops_custom_domain_is_allowed_once_configured(client, run_worker, settings):
    link = f"https://www.elbkerzen.de/60673655038/checkouts/ac/c1/recover?key={KEY}"
    _send(client, run_worker, abandoned_checkout_url=link)
    assert not mail.outbox
    assert "host www.elbkerzen.de is not the shop's" in _decision().reason

    settings.SHOP_STOREFRONT_DOMAINS = ["www.elbkerzen.de"]
    _send(client, run_worker, abandoned_checkout_url=link, token="another-checkout")
    (message,) = mail.outbox
    assert link in message.body


def test_a_stripe_session_links_to_stripe_or_the_shops_own_stripe_domain(
    client, run_worker, settings
):
    assert "buy.stripe.com" in STRIPE_CHECKOUT_HOSTS  # Stripe's documented recovery link
    # a Shopify host is not where a Stripe session is recovered
    post_stripe(client, stripe_expired(after_expiration={"recovery": {"url": SHOP_LINK}}))
    run_worker()
    assert not mail.outbox
    assert f"host {SHOP} is not the shop's" in _decision().reason

    settings.SHOP_STOREFRONT_DOMAINS = ["pay.elbkerzen.de"]
    custom = "https://pay.elbkerzen.de/r/live_asAb1724"
    # a session id the holdout draw keeps (automation.reminders.rules.in_holdout): it gets its mail
    session = "cs_test_custom_domain"
    post_stripe(client, stripe_expired(id=session, after_expiration={"recovery": {"url": custom}}))
    run_worker()
    (message,) = mail.outbox
    assert custom in message.body


def test_a_link_stored_before_the_check_is_checked_when_the_reminder_is_decided(client, run_worker):
    """The check runs at decision time, so rows written by older code are covered too."""
    _send(client, run_worker, abandoned_checkout_url="javascript:alert(1)")
    assert CheckoutState.objects.get().recovery_url == "javascript:alert(1)"  # kept as sent
    assert not mail.outbox


@pytest.mark.parametrize(
    ("url", "hosts", "problem"),
    [
        (SHOP_LINK, frozenset({SHOP}), ""),
        (SHOP_LINK, frozenset({"other.myshopify.com"}), f"host {SHOP}"),
        ("https://" + "a" * 300 + ".example/", frozenset(), "host " + "a" * 100 + " is not"),
    ],
)
def test_recovery_link_problem(url, hosts, problem):
    found = str(recovery_link_problem(url, hosts))
    assert found == "" if not problem else problem in found
    assert len(found) <= 200


# --- the greeting --------------------------------------------------------------------------


def _greetings(message) -> tuple[str, str]:
    text = next(line for line in message.body.splitlines() if line.startswith("Hallo"))
    html = message.alternatives[0][0]
    return text, html


def test_a_name_with_markup_and_a_link_is_greeted_as_plain_text_in_both_parts(client, run_worker):
    _send(
        client,
        run_worker,
        customer={"first_name": "<b>Kim</b> https://evil.example/gewinn"},
    )
    (message,) = mail.outbox
    text, html = _greetings(message)
    assert text == "Hallo Kim,"
    assert "Hallo Kim," in html
    for part in (message.body, html):
        assert "evil" not in part
        assert "<b>Kim" not in part
        assert "&lt;b&gt;" not in part


def test_a_very_long_name_is_cut(client, run_worker):
    _send(client, run_worker, customer={"first_name": "Kim" + "a" * 500})
    (message,) = mail.outbox
    text, _ = _greetings(message)
    assert text == "Hallo Kim" + "a" * (FIRST_NAME_MAX_CHARS - 3) + ","


def test_a_name_that_is_only_a_link_gets_the_plain_greeting(client, run_worker):
    _send(client, run_worker, customer={"first_name": "www.gewinnspiel.example"})
    (message,) = mail.outbox
    text, _ = _greetings(message)
    assert text == "Hallo,"


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        ("Kim", "Kim"),
        ("  Anne-Marie  ", "Anne-Marie"),
        ("Jörn", "Jörn"),
        ("O'Neil", "O'Neil"),
        ("J.R.", "J.R."),
        ("<b>Kim</b>", "Kim"),
        ("<img src=x onerror=alert(1)>Kim", "Kim"),
        ("&lt;b&gt;Kim&lt;/b&gt;", "Kim"),
        ("&amp;lt;i&amp;gt;Kim", "Kim"),
        ("Kim https://evil.example", "Kim"),
        ("Kim http://evil.example/x?y=1", "Kim"),
        ("Kim www.evil.example", "Kim"),
        ("Kim evil.example", "Kim"),
        ("Kim evil.com/gewinn", "Kim"),
        ("Kim javascript:alert(1)", "Kim"),
        ("Kim kim@evil.example", "Kim"),
        ("Kim //evil.example", "Kim"),
        ("Kim\x00\u202e\u200b", "Kim"),
        ("Kim\n\nJo\tAnn", "Kim Jo Ann"),
        ("Kim <", "Kim"),
        ("https://evil.example", ""),
        ("", ""),
        (None, ""),
        (42, ""),
        ("x" * 100, "x" * FIRST_NAME_MAX_CHARS),
    ],
)
def test_plain_first_name(raw, plain):
    assert plain_first_name(raw) == plain


def test_the_billing_name_is_cleaned_too():
    body = checkout_body(customer=None, billing_address={"first_name": "<i>Jo</i> evil.example"})
    assert shopify_checkouts.parse_shopify_checkout(body, SHOP).first_name == "Jo"
