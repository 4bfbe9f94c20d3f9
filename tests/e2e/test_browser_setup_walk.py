"""The merchant sets the service up in Chromium, from the first login to the first brake:
asked for an address once, the set-up page connects Google (sign-in through a stand-in consent
page, then the account chosen from those the sign-in reaches) and tests the shop, a watched
product is added by picking the product and its ad groups by name, the reminder text is edited,
previewed and sent as a test to a local SMTP server, and a burst of sell-outs trips the brake:
the notice bar and the status column say so, and "Alle anwenden" asks before it applies.

Chromium (Debian's /usr/bin/chromium) through Playwright, as tests/e2e/test_browser_threshold.py.
The vendors are the local stand-ins: the shop (tests/support/shopify_standin.py), Google Ads over
gRPC (tests/support/ads_standin.py), Google's token endpoint (tests/google_ads/test_oauth.py) and a
consent page that sends the browser back the way Google documents it
(https://developers.google.com/identity/protocols/oauth2/web-server#handlingresponse: the
redirect URI with `code` and the `state` it was given). Screenshots go to test-results/.
"""

from email import message_from_bytes
from email.policy import default as default_policy
from html import escape
from urllib.parse import urlencode

import pytest
from django.utils import translation
from django.utils.translation import ngettext
from werkzeug import Request, Response

from automation.google_ads.oauth import ADS_SCOPE
from automation.models import HeldChange, ReminderSettings, WatchedProduct
from automation.platform import connections
from tests.e2e.test_browser_threshold import SCREENSHOTS, browser, pytestmark  # noqa: F401 (fixture, marks)
from tests.e2e.test_browser_watched import german, status_cell
from tests.google_ads.test_oauth import CLIENT_ID, CLIENT_SECRET, REFRESH_TOKEN, TokenEndpoint
from tests.support import winterzauber
from tests.support.brake import sell_out_burst
from tests.support.shopify_standin import SHOP_NAME
from tests.support.winterzauber import AD_GROUPS, CUSTOMER, PRODUCT

PASSWORD = "kerzen-2026!"
ADDRESS = "inhaberin@elbkerzen.example"
CODE = "4/standin-consent-code"
SUBJECT = "Dein Winterzauber wartet auf dich"


class ConsentPage:
    """Google's consent page, reduced to one "Zulassen" link back to the redirect URI with a
    code and the state it was given; records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[dict[str, str]] = []

    def __call__(self, request: Request) -> Response:
        asked = dict(request.args.items())
        self.asked.append(asked)
        back = f"{asked['redirect_uri']}?{urlencode({'code': CODE, 'state': asked['state']})}"
        html = (
            '<!doctype html><link rel="icon" href="data:,"><title>Google</title>'
            f'<a id="allow" href="{escape(back)}">Zulassen</a>'
        )
        return Response(html, content_type="text/html; charset=utf-8")


@pytest.fixture
def google(httpserver, settings, monkeypatch, live_server):
    """The consent page and the token endpoint on 127.0.0.1; no Google setting from the
    environment, so the set-up page's own values count."""
    consent, token = ConsentPage(), TokenEndpoint()
    httpserver.expect_request("/o/oauth2/auth", method="GET").respond_with_handler(consent)
    httpserver.expect_request("/token", method="POST").respond_with_handler(token)
    settings.GOOGLE_OAUTH_AUTH_URI = httpserver.url_for("/o/oauth2/auth")
    settings.GOOGLE_OAUTH_TOKEN_URI = httpserver.url_for("/token")
    settings.PUBLIC_BASE_URL = live_server.url
    for field in connections.FIELDS.values():
        if field.name.startswith("google_ads"):
            setattr(settings, field.env_name, "")
    # oauthlib refuses plain HTTP unless told; the stand-ins speak plain HTTP
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")
    yield consent, token
    httpserver.check_handler_errors()


@pytest.fixture
def account(google_ads):
    """The account the sign-in reaches directly, with the shop's ad groups."""
    google_ads.reset_search()
    google_ads.accessible = [CUSTOMER]
    google_ads.add_account(CUSTOMER, "Elbkerzen Shop")
    for ad_group_id, (name, campaign, status) in AD_GROUPS.items():
        google_ads.add_ad_group(ad_group_id, name, campaign, status)
    yield google_ads
    google_ads.reset_search()


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"walk-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000


def german_plural(singular: str, plural: str, count: int) -> str:
    with translation.override("de"):
        return ngettext(singular, plural, count) % {"count": count}


def test_the_merchant_sets_up_the_service_and_meets_the_brake(
    browser,  # noqa: F811 (the fixture imported above)
    live_server,
    django_user_model,
    httpserver,
    settings,
    google,
    account,
    smtp_server,
    queue,
):
    consent, token = google
    winterzauber.shop(httpserver, settings)
    settings.ALERT_EMAILS = []
    settings.LANGUAGE_CODE = "de"  # the shop's language: its alerts are written in it
    django_user_model.objects.create_superuser("inhaberin", "", PASSWORD)
    page = browser.new_page(locale="de-DE", viewport={"width": 1366, "height": 900})

    # 1. First login: the admin without an address is asked for one, once; one field.
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "inhaberin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/setup/email/**")
    assert "Wohin sollen Warnungen gehen?" in page.inner_text("#content")
    assert page.locator("#content form input:visible:not([type=submit])").count() == 1
    shot(page, "01-first-login")
    page.fill("#id_email", ADDRESS)
    page.click("input[type=submit]:not([name=skip])")
    page.wait_for_url(f"{live_server.url}/admin/")
    assert f"Gespeichert: Warnungen gehen an {ADDRESS}." in page.inner_text(".messagelist")
    assert django_user_model.objects.get().email == ADDRESS

    # 2. The set-up page, from the index: enter Google's OAuth client and save.
    page.click("a[href='/admin/setup/']")
    page.wait_for_selector("#setup-google_ads")
    page.fill("#id_google_ads_developer_token", "standin-developer-token")
    page.fill("#id_google_ads_client_id", CLIENT_ID)
    page.fill("#id_google_ads_client_secret", CLIENT_SECRET)
    page.click("#setup-google_ads-form button[value='google_ads_save']")
    saved = page.wait_for_selector("#setup-google_ads .setup-result.ok")
    assert saved.inner_text().strip() == "Gespeichert."
    shot(page, "02-setup")

    # 3. "Mit Google verbinden": Google's consent page, then back with code and state; the
    #    accounts the sign-in reaches are offered, and the merchant chooses the shop's.
    page.click("#setup-google_ads button:has-text('Mit Google verbinden')")
    page.wait_for_selector("#allow")
    (asked,) = consent.asked
    assert asked["scope"] == ADS_SCOPE and asked["access_type"] == "offline"
    assert asked["client_id"] == CLIENT_ID
    assert asked["redirect_uri"] == f"{live_server.url}/admin/setup/google/callback/"
    page.click("#allow")
    page.wait_for_selector("#setup-google_ads-accounts")
    (exchange,) = token.forms
    assert exchange["code"] == CODE and exchange["grant_type"] == "authorization_code"
    ads = page.inner_text("#setup-google_ads")
    assert "Mit Google verbunden. Wählen Sie jetzt das Google-Ads-Konto." in ads
    assert "Elbkerzen Shop (1234567890)" in ads
    assert REFRESH_TOKEN not in page.content()
    shot(page, "03-google-accounts")
    page.check(f"#setup-google_ads-accounts input[value='{CUSTOMER}:']")
    page.click("#setup-google_ads-accounts button[value='google_ads_account']")
    chosen = page.wait_for_selector("#setup-google_ads .setup-result.ok")
    assert "Gespeichert: das Konto „Elbkerzen Shop“ (1234567890)." in chosen.inner_text()
    values = connections.current()
    assert values.google_ads_refresh_token.value == REFRESH_TOKEN
    assert values.google_ads_customer_id.value == CUSTOMER

    # 4. The shop: "Verbindung testen" reaches the Shopify stand-in.
    page.click("#setup-shopify button:has-text('Verbindung testen')")
    result = page.wait_for_selector("#setup-shopify .setup-result.ok")
    assert SHOP_NAME in result.inner_text()
    shot(page, "04-shopify-tested")

    # 5. A watched product: the product and two ad groups picked by name, saved.
    page.goto(f"{live_server.url}/admin/automation/watchedproduct/add/")
    page.fill("#id_product_id_search", "Winterz")
    choice = page.wait_for_selector(".setup-picker-choice:has-text('Winterzauber')")
    assert "groß – 12 auf Lager" in choice.inner_text()
    choice.click()
    assert page.input_value("#id_product_id") == str(PRODUCT)
    for search, name in (
        ("Kerzen Winter", "Winterzauber Suche"),
        ("Display", "Winterzauber Display"),
    ):
        page.fill("#id_ad_groups_search", search)
        page.click(f".setup-picker-choice:has-text('{name}')")
        page.wait_for_selector(f".ad-group-list li:has-text('{name}') input:checked")
    shot(page, "05-product-picked")
    page.click("input[name='_save']")
    page.wait_for_selector(".messagelist")
    product = WatchedProduct.objects.get()
    assert (product.label, product.product_id) == ("Winterzauber", PRODUCT)
    assert sorted(product.ad_groups.values_list("ad_group_id", "name")) == [
        ("555", "Winterzauber Suche"),
        ("556", "Winterzauber Display"),
    ]

    # 6. The reminder: a new subject, previewed unsaved (a new tab), the test sent to me.
    page.goto(f"{live_server.url}/admin/automation/remindersettings/")
    page.wait_for_selector("#id_mail_subject")
    page.fill("#id_mail_subject", SUBJECT)
    with page.expect_popup() as opened:
        page.click("button:has-text('Vorschau mit diesen Änderungen')")
    preview = opened.value
    preview.wait_for_selector("#reminder-subject")
    assert preview.inner_text("#reminder-subject") == SUBJECT
    assert "Ihre ungespeicherten Änderungen" in preview.inner_text("#content")
    assert "Winterzauber" in preview.inner_text("#reminder-text")  # the sample basket
    shot(preview, "06-reminder-preview")

    # 7. "Test an mich senden": the local SMTP server receives it, with the unsaved subject.
    preview.click("input[type=submit][value='Test an mich senden']")
    preview.wait_for_selector(".messagelist")
    assert f"Test-Erinnerung an {ADDRESS} gesendet." in preview.inner_text(".messagelist")
    received = [message_from_bytes(raw, policy=default_policy) for raw in smtp_server.messages]
    (test_mail,) = [m for m in received if m["Subject"] == SUBJECT]
    assert test_mail["To"] == ADDRESS
    assert "Winterzauber" in test_mail.get_body(preferencelist=("plain",)).get_content()
    shot(preview, "07-test-mail-sent")
    preview.close()
    assert ReminderSettings.load().mail_subject != SUBJECT  # nothing saved by the preview
    page.click("input[name='_save']")
    page.wait_for_selector(".messagelist")
    assert ReminderSettings.load().mail_subject == SUBJECT

    # 8. The brake: a burst of sell-outs; the notice bar names the held pauses, the status
    #    column says "zurückgehalten (Notbremse)".
    held = sell_out_burst()
    # the alert reaches the address given at the first login, with the link to decide
    received = [message_from_bytes(raw, policy=default_policy) for raw in smtp_server.messages]
    (alert,) = [
        m for m in received if m["Subject"] == "[Elbkerzen] Notbremse: Pausen zurückgehalten"
    ]
    assert alert["To"] == ADDRESS
    assert f"{live_server.url}/admin/automation/heldchange/" in alert.get_content()
    page.goto(f"{live_server.url}/admin/")
    notice = page.locator('[data-testid="notices"] [data-notice="brake"]')
    expected = german_plural(
        "The safety brake holds %(count)d pause: the ad keeps running until you apply or "
        "discard it.",
        "The safety brake holds %(count)d pauses: the ads keep running until you apply or "
        "discard them.",
        len(held),
    )
    assert expected.startswith("Die Notbremse")
    assert expected in notice.inner_text()
    shot(page, "08-brake-notice")
    page.goto(f"{live_server.url}/admin/automation/watchedproduct/")
    label = f"Kerze {int(held[-1].ad_group_id) - 800}"
    assert "zurückgehalten (Notbremse)" in status_cell(page, label)
    shot(page, "09-held-status")

    # 9. "Entscheiden" in the bar, then "Alle anwenden": a page says what will happen and
    #    asks; confirmed, the held pauses reach Google Ads and the notice is gone.
    page.click('[data-notice="brake"] a')
    page.wait_for_url("**/admin/automation/heldchange/**")
    apply_all = page.locator('[data-testid="apply-all"]')
    assert apply_all.text_content().strip() == f"Alle anwenden ({len(held)})"
    apply_all.click()
    page.wait_for_url("**/apply-all/")
    effect = page.inner_text('[data-testid="effect"]')
    assert effect == german_plural(
        "%(count)d held change will be applied: its ad group gets the status its stock "
        "says now, sent to Google Ads (it may have recovered since and keep running).",
        "%(count)d held changes will be applied: each ad group gets the status its stock "
        "says now, sent to Google Ads (some may have recovered since and keep running).",
        len(held),
    )
    assert HeldChange.objects.filter(resolution="open").count() == len(held)
    shot(page, "10-apply-all-confirmation")
    assert page.get_attribute('[data-testid="confirm"]', "value") == "Ja, anwenden"
    page.click('[data-testid="confirm"]')
    page.wait_for_url("**/admin/automation/heldchange/")
    assert german(
        "Applied %(count)d held changes: each ad group got the status its stock says now."
    ) % {"count": len(held)} in page.inner_text(".messagelist")
    assert HeldChange.objects.filter(resolution="open").count() == 0
    assert page.locator('[data-notice="brake"]').count() == 0
    assert {account.statuses.get(change.ad_group_id) for change in held} == {"PAUSED"}
    shot(page, "11-applied")
