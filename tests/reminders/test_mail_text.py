"""The reminder mail is the merchant's: subject, greeting, text, sender name and imprint are
settings, the preview shows the mail as sent, and no reminder goes out without an imprint."""

import html as html_lib
import re

import pytest
from django.contrib.auth.models import Permission
from django.core import mail
from django.core.exceptions import ValidationError
from django.forms.models import model_to_dict

from automation.models import ReminderDecision, ReminderSettings
from automation.reminders import checkouts, mail_text
from automation.reminders import mail as reminder_mail
from tests.reminders.test_checkouts import EMAIL, checkout_body
from tests.support.imprint import TEST_IMPRINT
from tests.support.signing import post_shopify

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("not_bought")]

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
PREVIEW = "/admin/automation/remindersettings/preview/"
TEST_MAIL = "/admin/automation/remindersettings/preview/test/"


def _remind(client, run_worker, **changes):
    post_shopify(client, checkout_body(**changes), topic="checkouts/update")
    run_worker()


def _edit(**fields) -> ReminderSettings:
    config = ReminderSettings.load()
    for name, value in fields.items():
        setattr(config, name, value)
    config.full_clean()
    config.save()
    return config


def _html(message) -> str:
    (alternative,) = message.alternatives
    return alternative[0]


# --- what is sent --------------------------------------------------------------------------


def test_the_defaults_make_the_german_mail_with_imprint_and_unsubscribe_link(
    client, run_worker, settings
):
    settings.DEFAULT_FROM_EMAIL = "automation@elbkerzen.example"
    _remind(client, run_worker)

    (message,) = mail.outbox
    assert message.subject == "Dein Warenkorb bei Elbkerzen wartet auf dich"
    assert message.from_email == "Elbkerzen <automation@elbkerzen.example>"
    assert message.body.startswith("Hallo,\n\ndu hast bei Elbkerzen noch etwas in deinem")
    assert "Hier geht's direkt zurück zu deinem Warenkorb:\nhttps://" in message.body
    assert "Summe: 40,00 €" in message.body
    assert f"--\n{TEST_IMPRINT}\n\nKeine Erinnerungen mehr? Abmelden: http" in message.body
    html = _html(message)
    assert "Hafenstraße 1, 20457 Hamburg" in html
    assert "Zurück zum Warenkorb</a>" in html
    assert message.extra_headers["List-Unsubscribe"][1:-1] in html


def test_the_merchants_subject_greeting_text_and_sender_are_sent(client, run_worker, settings):
    settings.DEFAULT_FROM_EMAIL = "Automation <automation@elbkerzen.example>"
    _edit(
        mail_sender_name="Kerzenhaus Müller, Hamburg",
        mail_subject="{vorname}, Ihre Kerzen warten",
        mail_greeting="Guten Tag {vorname}!",
        mail_body="Ihr Korb:\n{warenkorb}\n\nZum Korb: {link}\n\nCode: {rabattcode} ({rabatt} %)",
    )
    _remind(client, run_worker, customer={"first_name": "Kim"})

    (message,) = mail.outbox
    assert message.subject == "Kim, Ihre Kerzen warten"
    assert message.from_email == '"Kerzenhaus Müller, Hamburg" <automation@elbkerzen.example>'
    assert message.message()["From"].endswith("<automation@elbkerzen.example>")
    assert message.body.startswith("Guten Tag Kim!\n\nIhr Korb:\n- ")
    assert "Zum Korb: https://elbkerzen.myshopify.com/" in message.body
    assert "du hast bei" not in message.body
    html = _html(message)
    assert "Guten Tag Kim!" in html
    assert 'Zum Korb: <a href="https://elbkerzen.myshopify.com/' in html
    assert TEST_IMPRINT.splitlines()[0] in message.body


def test_discount_lines_appear_only_in_reminders_with_discount():
    config = ReminderSettings(
        discount_code="ELBE10", mail_imprint=TEST_IMPRINT, mail_body=mail_text.DEFAULT_BODY
    )
    checkout = reminder_mail.sample_checkout(EMAIL)

    plain = reminder_mail.render(checkout, "plain", config)
    discount = reminder_mail.render(checkout, "discount", config)

    assert "ELBE10" not in plain.text + plain.html
    assert "Mit dem Code" not in plain.text
    assert "Mit dem Code ELBE10 sparst du 10 % auf deine Bestellung." in discount.text
    assert ">ELBE10</strong> sparst du 10 % auf deine Bestellung.</p>" in discount.html


def test_without_a_first_name_the_greeting_loses_its_space():
    config = ReminderSettings(mail_imprint=TEST_IMPRINT)
    checkout = reminder_mail.sample_checkout(EMAIL)
    checkout.first_name = ""

    rendered = reminder_mail.render(checkout, "plain", config)

    assert rendered.text.startswith("Hallo,\n")
    assert '<p style="margin:0 0 16px 0;">Hallo,</p>' in rendered.html


def test_the_merchants_markup_is_text_in_both_parts(client, run_worker):
    _edit(
        mail_greeting="Hallo <b>{vorname}</b>,",
        mail_body='<script>alert("x")</script> & {link}\n{rabattcode}',
        mail_imprint="Kerzen <i>GmbH</i>\n<img src=x onerror=alert(1)>",
    )
    _remind(client, run_worker)

    (message,) = mail.outbox
    assert '<script>alert("x")</script> & https://' in message.body
    html = _html(message)
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; <a href=" in html
    assert "Hallo &lt;b&gt;" in html
    assert "Kerzen &lt;i&gt;GmbH&lt;/i&gt;<br>&lt;img src=x onerror=alert(1)&gt;" in html
    for tag in ("<script", "<b>", "<i>", "<img"):
        assert tag not in html


def test_a_value_that_looks_like_a_placeholder_is_not_filled_again():
    config = ReminderSettings(mail_imprint=TEST_IMPRINT, discount_code="GEHEIM")
    checkout = reminder_mail.sample_checkout(EMAIL)
    checkout.first_name = "{rabattcode} {{vorname}}"

    rendered = reminder_mail.render(checkout, "plain", config)

    assert rendered.text.startswith("Hallo {rabattcode} {{vorname}},")
    assert "GEHEIM" not in rendered.text


def test_a_sender_name_that_bypassed_validation_cannot_end_the_header():
    config = ReminderSettings(mail_sender_name="Elbkerzen\r\nBcc: alle@example.com")

    sender = reminder_mail.sender(config)

    assert "\r" not in sender and "\n" not in sender
    assert sender.endswith("<automation@elbkerzen.example>")


# --- what is refused on save -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("mail_body", "Hallo {name}, {link} {rabattcode}", "Unknown placeholder {name}"),
        ("mail_body", "Hallo {Vorname}, {link} {rabattcode}", "Unknown placeholder {Vorname}"),
        ("mail_body", "Hallo {vorname}, {rabattcode}", "needs the placeholder {link}"),
        ("mail_body", "Hallo {vorname}, {link}", "needs the placeholder {rabattcode}"),
        ("mail_subject", "Ihr Korb: {link}", "Unknown placeholder {link}. Allowed here: "),
        ("mail_greeting", "Hallo {vorname.__class__}", "Unknown placeholder {vorname.__class__}"),
        ("mail_sender_name", "Elbkerzen\r\nBcc: x@example.com", "Line breaks"),
        ("mail_sender_name", "Elbkerzen\nBcc: x@example.com", "Line breaks"),
        ("mail_subject", "Hallo\rBcc: x@example.com", "Line breaks"),
    ],
)
def test_a_text_the_mail_cannot_carry_is_refused(field, value, problem):
    config = ReminderSettings.load()
    setattr(config, field, value)

    with pytest.raises(ValidationError) as refused:
        config.full_clean()

    assert any(problem in text for text in refused.value.message_dict[field])


def test_the_admin_refuses_an_unknown_placeholder_and_names_it(admin_client):
    config = ReminderSettings.load()
    data = {k: ("" if v is None else v) for k, v in model_to_dict(config).items()}
    data["mail_body"] = "Hallo {kundenname}, {link} {rabattcode}"

    response = admin_client.post(
        f"/admin/automation/remindersettings/{config.pk}/change/",
        data,
        **EN,
    )

    assert response.status_code == 200
    assert "Unknown placeholder {kundenname}. Allowed here: {vorname}" in response.content.decode()
    assert ReminderSettings.load().mail_body == mail_text.DEFAULT_BODY


# --- no imprint, no reminder -----------------------------------------------------------------


def test_without_an_imprint_no_reminder_is_sent_and_the_reason_is_kept(client, run_worker):
    ReminderSettings.objects.filter(pk=1).update(mail_imprint="  \n ")
    _remind(client, run_worker)

    assert not mail.outbox
    (decision,) = ReminderDecision.objects.all()
    assert decision.arm == ReminderDecision.Arm.NONE
    assert decision.reason == str(checkouts.IMPRINT_MISSING) == "imprint missing"
    assert decision.sent_at is None


def test_without_an_imprint_the_setup_page_shows_the_mail_section_red(admin_client):
    ReminderSettings.objects.filter(pk=1).update(mail_imprint="")

    page = admin_client.get("/admin/setup/", **EN).content.decode()
    email = page[
        page.index('id="setup-email"') : page.index("</section>", page.index('id="setup-email"'))
    ]

    assert "light-red" in email
    assert "The imprint is missing" in email
    assert 'href="/admin/automation/remindersettings/1/change/"' in email


def test_with_an_imprint_the_mail_section_is_not_red_for_it(admin_client):
    page = admin_client.get("/admin/setup/", **EN).content.decode()
    start = page.index('id="setup-email"')
    email = page[start : page.index("</section>", start)]

    assert "The imprint is missing" not in email
    assert "light-red" not in email


# --- the preview -----------------------------------------------------------------------------


def _srcdoc(page: str) -> str:
    (found,) = re.findall(r'<iframe[^>]*\ssandbox=""[^>]*\ssrcdoc="([^"]*)"', page)
    return html_lib.unescape(found)


def _text(page: str) -> str:
    (found,) = re.findall(
        r'<pre class="reminder-preview-text" id="reminder-text">(.*?)</pre>', page, re.S
    )
    return html_lib.unescape(found)


def test_the_preview_shows_the_bytes_the_test_mail_sends(admin_client, admin_user):
    _edit(discount_code="ELBE10", mail_body='<script>x</script> "{vorname}"\n{link}\n{rabattcode}')

    page = admin_client.get(f"{PREVIEW}?arm=discount", **EN).content.decode()
    response = admin_client.post(TEST_MAIL, {"arm": "discount"}, **EN)

    assert response.status_code == 302
    (message,) = mail.outbox
    assert message.to == [admin_user.email]
    assert _srcdoc(page) == _html(message)
    assert _text(page) == message.body
    assert html_lib.unescape(re.search(r'id="reminder-subject">(.*?)<', page)[1]) == message.subject
    assert "ELBE10" in message.body
    assert "<script>" not in _html(message)


def test_the_preview_renders_with_the_send_paths_function():
    config = ReminderSettings(mail_imprint=TEST_IMPRINT)
    checkout = reminder_mail.sample_checkout(EMAIL)

    rendered = reminder_mail.render(checkout, "plain", config)
    message = reminder_mail.build(checkout, "plain", config)

    assert (message.subject, message.body, _html(message)) == (
        rendered.subject,
        rendered.text,
        rendered.html,
    )


def test_the_test_mail_needs_an_address_and_says_where_to_set_it(admin_client, admin_user):
    admin_user.email = ""
    admin_user.save()

    response = admin_client.post(TEST_MAIL, {"arm": "plain"}, follow=True, **EN)

    assert not mail.outbox
    page = response.content.decode()
    assert "Your user account has no e-mail address" in page
    assert f"/admin/auth/user/{admin_user.pk}/change/" in page


def test_the_settings_page_links_the_preview(admin_client):
    page = admin_client.get("/admin/automation/remindersettings/1/change/", **EN).content.decode()
    assert f'href="{PREVIEW}"' in page


def _staff(django_user_model, client, *codenames):
    user = django_user_model.objects.create_user(
        "mitarbeiterin", email="team@elbkerzen.example", password="x", is_staff=True
    )
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    return client


def test_staff_without_the_view_permission_get_403(client, django_user_model):
    staff = _staff(django_user_model, client)
    assert staff.get(PREVIEW).status_code == 403
    assert staff.post(TEST_MAIL, {"arm": "plain"}).status_code == 403
    assert not mail.outbox


def test_viewing_is_not_sending(client, django_user_model):
    staff = _staff(django_user_model, client, "view_remindersettings")
    page = staff.get(PREVIEW, **EN)
    assert page.status_code == 200
    assert TEST_MAIL not in page.content.decode()
    assert staff.post(TEST_MAIL, {"arm": "plain"}).status_code == 403
    assert not mail.outbox


def test_the_test_mail_is_post_only_and_knows_its_arms(admin_client):
    assert admin_client.get(TEST_MAIL).status_code == 405
    assert admin_client.post(TEST_MAIL, {"arm": "discount"}).status_code == 404  # no code set
    assert admin_client.get(f"{PREVIEW}?arm=holdout").status_code == 404
    assert not mail.outbox


# --- placeholders, plainly -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "filled"),
    [
        ("Hallo {vorname},", "Hallo Kim,"),
        ("Hallo {shop}", "Hallo {shop}"),  # not in the values: kept
        ("{{vorname}}", "{Kim}"),
        ("ohne Klammern", "ohne Klammern"),
        ("{ vorname }", "{ vorname }"),
    ],
)
def test_fill(text, filled):
    assert mail_text.fill(text, {"vorname": "Kim"}) == filled


# --- the preview of unsaved changes ----------------------------------------------------------


def _form_data(**changes) -> dict:
    data = {k: ("" if v is None else v) for k, v in model_to_dict(ReminderSettings.load()).items()}
    return {**data, **changes, "_draft": "1"}


def test_unsaved_changes_are_previewed_and_test_sent_without_being_saved(admin_client):
    data = _form_data(mail_subject="Entwurf für {vorname}", mail_sender_name="Kerzen Entwurf")

    page = admin_client.post(PREVIEW, data, **EN).content.decode()
    assert 'id="reminder-subject">Entwurf für Kim<' in page
    fields = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page)
    hidden = {name: html_lib.unescape(value) for name, value in fields}  # as a browser posts
    assert hidden["_draft"] == "1"
    assert hidden["mail_subject"] == "Entwurf für {vorname}"

    admin_client.post(TEST_MAIL, {**hidden, "arm": "plain"}, **EN)

    (message,) = mail.outbox
    assert message.subject == "Entwurf für Kim"
    assert message.from_email.startswith("Kerzen Entwurf <")
    assert _srcdoc(page) == _html(message)
    assert ReminderSettings.load().mail_subject == mail_text.DEFAULT_SUBJECT


def test_unsaved_changes_with_an_unknown_placeholder_show_the_error_and_the_saved_mail(
    admin_client,
):
    page = admin_client.post(PREVIEW, _form_data(mail_subject="Hallo {name}"), **EN)

    text = page.content.decode()
    assert "Unknown placeholder {name}" in text
    assert 'id="reminder-subject">Dein Warenkorb bei Elbkerzen wartet auf dich<' in text
    assert 'name="_draft"' not in text
    assert ReminderSettings.load().mail_subject == mail_text.DEFAULT_SUBJECT


def test_only_who_may_change_the_settings_may_preview_a_draft(client, django_user_model):
    staff = _staff(django_user_model, client, "view_remindersettings")
    response = staff.post(PREVIEW, _form_data(mail_subject="x"))
    assert response.status_code == 403
    assert b'id="reminder-subject"' not in response.content  # no preview rendered
    assert ReminderSettings.load().mail_subject == mail_text.DEFAULT_SUBJECT


def test_the_settings_page_offers_the_preview_of_unsaved_changes(admin_client):
    page = admin_client.get("/admin/automation/remindersettings/1/change/", **EN).content.decode()
    assert f'formaction="{PREVIEW}"' in page
