"""The merchant's admin is German everywhere: the catalogue is complete, and no page leaks English.

Three checks, each listing everything it found, so one run says what to fix:

1. Every entry of locale/de/LC_MESSAGES/django.po has a German text and none is fuzzy.
2. The catalogue holds every string of the current code: `makemessages` run on a copy of the
   sources adds nothing (strings added since the last `makemessages` are listed).
3. Every delivery result code (automation/platform/notes.py) has a German text and renders German.
4. Every admin page (index, each model's list, add and change page, the set-up page and the
   dashboard) rendered in German shows none of the catalogue's English msgids in its visible
   text or titles.

To fix a failure: run `makemessages` (README, "Translations" in docs/OPERATIONS.md), write the
German msgstr for each listed msgid, run `compilemessages`, and check with
`msgfmt --check-format -o /dev/null locale/de/LC_MESSAGES/django.po`.
"""

import ast
import gettext
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import date, time, timedelta
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone, translation

from automation.models import (
    AdGroup,
    AdGroupAction,
    BrakeEpisode,
    BrakeSettings,
    CheckoutState,
    Claim,
    DashboardSettings,
    DataRequest,
    Delivery,
    HeldChange,
    Location,
    MarginRule,
    Product,
    Promotion,
    PromotionAdGroup,
    ReconcileRun,
    ReminderDecision,
    ReminderSettings,
    StockLevel,
    SuppressedAddress,
    Variant,
    WatchedProduct,
)
from automation.platform import notes
from automation.stock import apply

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "locale" / "de" / "LC_MESSAGES" / "django.po"
# What makemessages reads: the project's code and templates (README: the makemessages command).
SOURCES = ("manage.py", "elbkerzen", "automation", "templates", "locale")
SETTINGS = "elbkerzen.settings"
# The set-up page; walked once it exists.
SETUP_PAGE = "/admin/setup/"


# --- Reading a .po file -----------------------------------------------------------------------


@dataclass
class Entry:
    """One message of a .po file; `line` is where its msgid starts."""

    line: int
    msgid: str = ""
    msgid_plural: str = ""
    msgctxt: str | None = None
    msgstr: list[str] = field(default_factory=list)
    fuzzy: bool = False

    @property
    def translated(self) -> bool:
        return bool(self.msgstr) and all(self.msgstr)

    def __str__(self) -> str:
        context = f" (context {self.msgctxt!r})" if self.msgctxt is not None else ""
        return f"django.po:{self.line}: {self.msgid!r}{context}"


def read_catalogue(path: Path) -> list[Entry]:
    """The entries of a .po file (the header and obsolete `#~` entries left out)."""
    entries: list[Entry] = []
    entry: Entry | None = None
    keyword = ""
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#~"):
            entry = None if not line else entry
            continue
        if line.startswith("#"):
            if entry is None:
                entry = Entry(line=number)
                entries.append(entry)
            if line.startswith("#,") and "fuzzy" in line:
                entry.fuzzy = True
            continue
        match = re.match(r'(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)\s+(".*")$', line)
        if match:
            keyword, literal = match.groups()
            if entry is None or (keyword in ("msgid", "msgctxt") and entry.msgstr):
                entry = Entry(line=number)
                entries.append(entry)
            if keyword == "msgid":
                entry.line = number
            text = ast.literal_eval(literal)
        else:
            text = ast.literal_eval(line)  # a continuation line of the current keyword
        if keyword.startswith("msgstr"):
            if match:
                entry.msgstr.append(text)
            else:
                entry.msgstr[-1] += text
        elif keyword == "msgctxt":
            entry.msgctxt = (entry.msgctxt or "") + text
        else:
            setattr(entry, keyword, getattr(entry, keyword) + text)
    return [entry for entry in entries if entry.msgid]


def listing(title: str, entries: list[Entry]) -> str:
    return f"{title} ({len(entries)}):\n" + "\n".join(f"  {entry}" for entry in entries)


# --- 1 and 2: the catalogue -----------------------------------------------------------------


def test_every_catalogue_entry_has_a_german_text():
    entries = read_catalogue(CATALOGUE)
    assert len(entries) > 100, "the catalogue was not read"
    untranslated = [entry for entry in entries if not entry.translated]
    fuzzy = [entry for entry in entries if entry.fuzzy]
    problems = []
    if untranslated:
        problems.append(listing("msgids without a German msgstr", untranslated))
    if fuzzy:
        problems.append(listing("fuzzy entries (check the German, then drop `#, fuzzy`)", fuzzy))
    assert not problems, "\n".join(problems)


def test_the_compiled_catalogue_is_current_and_well_formed():
    # msgfmt checks that each msgstr keeps the msgid's placeholders.
    checked = subprocess.run(
        ["msgfmt", "--check-format", "-o", "/dev/null", str(CATALOGUE)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    # And django.mo, what Django reads, says what django.po says (else: compilemessages).
    with CATALOGUE.with_suffix(".mo").open("rb") as compiled:
        translations = gettext.GNUTranslations(compiled)
    stale = [
        entry
        for entry in read_catalogue(CATALOGUE)
        if entry.translated
        and not entry.msgid_plural
        and entry.msgctxt is None
        and translations.gettext(entry.msgid) != entry.msgstr[0]
    ]
    assert not stale, listing("entries django.mo lacks (run compilemessages)", stale)


def test_the_catalogue_holds_every_string_of_the_code(tmp_path):
    # Given a copy of the sources, extracted as the README's makemessages command does
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, tmp_path / name)
    subprocess.run(
        [sys.executable, "manage.py", "makemessages", "-l", "de", "--no-obsolete"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "SECRET_KEY": "x", "DJANGO_SETTINGS_MODULE": SETTINGS},
        check=True,
        capture_output=True,
    )
    # Then it finds no msgid the committed catalogue lacks
    committed = {(entry.msgctxt, entry.msgid) for entry in read_catalogue(CATALOGUE)}
    extracted = read_catalogue(tmp_path / "locale" / "de" / "LC_MESSAGES" / "django.po")
    missing = [entry for entry in extracted if (entry.msgctxt, entry.msgid) not in committed]
    assert not missing, listing(
        "msgids in the code but not in locale/de/LC_MESSAGES/django.po (run makemessages)",
        missing,
    )


# --- 3: the results' codes --------------------------------------------------------------------

NOTE_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def test_every_result_code_is_shown_in_german():
    """Every code a handler can write is registered (an unknown one is refused when written),
    so rendering each registered code covers every result the demo history and the suite make."""
    entries = {entry.msgid: entry for entry in read_catalogue(CATALOGUE)}
    problems = []
    for code, template in notes.TEMPLATES.items():
        if code in notes.PLURALS:
            continue  # counted: test_every_counted_result_code_is_shown_in_german
        with translation.override("en"):
            msgid = str(template)
        entry = entries.get(msgid)
        if entry is None or not entry.translated or entry.fuzzy:
            problems.append(f"{code}: {msgid!r} has no German text in django.po")
            continue
        values = {name: "7001" for name in NOTE_PLACEHOLDER.findall(msgid)}
        stored = notes.note(code, **values).stored()
        with translation.override("en"):
            english = notes.render(stored)
        with translation.override("de"):
            german = notes.render(stored)
        words = NOTE_PLACEHOLDER.sub("", msgid).strip(" :;,.()")
        if not german or (words and german == english):
            problems.append(f"{code}: renders {german!r} in German (compilemessages?)")
    assert not problems, "result codes not shown in German:\n" + "\n".join(problems)


def test_every_counted_result_code_is_shown_in_german():
    """A counted code (ngettext) has both forms in German: one and many."""
    plurals = [entry for entry in read_catalogue(CATALOGUE) if entry.msgid_plural]
    problems = []
    for code, counted in notes.PLURALS.items():
        for count in (1, 7001):
            stored = notes.note(code, **{counted: count}).stored()
            with translation.override("en"):
                english = notes.render(stored)
            with translation.override("de"):
                german = notes.render(stored)
            known = any(
                form % {counted: count} == english
                for entry in plurals
                if entry.translated and f"%({counted})" in entry.msgid
                for form in (entry.msgid, entry.msgid_plural)
            )
            if not known:
                problems.append(f"{code}: {english!r} has no German text in django.po")
            elif not german or german == english or str(count) not in german:
                problems.append(f"{code}: renders {german!r} in German (compilemessages?)")
    assert notes.PLURALS, "no counted code was found"
    assert not problems, "counted result codes not shown in German:\n" + "\n".join(problems)


# --- 4: the pages -------------------------------------------------------------------------


class VisibleText(HTMLParser):
    """The text a reader sees: text nodes (not scripts or styles) and title/placeholder/alt."""

    SHOWN_ATTRIBUTES = ("title", "placeholder", "alt", "aria-label", "value")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.hidden += 1
        types = dict(attrs).get("type", "")
        for name, value in attrs:
            if value and name in self.SHOWN_ATTRIBUTES:
                if name == "value" and (tag != "input" or types not in ("submit", "button")):
                    continue  # form values are data, not our words
                self.chunks.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.hidden = max(0, self.hidden - 1)

    def handle_data(self, data: str) -> None:
        if not self.hidden and data.strip():
            self.chunks.append(data)


def visible_text(html: str) -> list[str]:
    parser = VisibleText()
    parser.feed(html)
    return [" ".join(chunk.split()) for chunk in parser.chunks]


PLACEHOLDER = re.compile(r"%\([a-z_]+\)[sdf]|%[sdf]|\{[a-z_]*\}")


def english_phrases(entries: list[Entry]) -> list[tuple[str, Entry]]:
    """What would show an English msgid: the whole msgid, or its longer fixed parts.

    A phrase of one or two words counts only as a whole text chunk ("last action" as a column
    header), since such words also appear inside data; longer phrases count anywhere.
    """
    phrases = []
    for entry in entries:
        if not entry.translated or entry.msgstr[0] == entry.msgid:
            continue  # same in both languages ("Dashboard", "Shopify")
        for msgid in filter(None, (entry.msgid, entry.msgid_plural)):
            for part in PLACEHOLDER.split(msgid):
                part = " ".join(part.split()).strip(" :;,.()–-")
                if part and (part == " ".join(msgid.split()) or len(part.split()) >= 3):
                    phrases.append((part, entry))
    return phrases


def leaks(html: str, phrases: list[tuple[str, Entry]]) -> set[str]:
    chunks = visible_text(html)
    found = set()
    for phrase, entry in phrases:
        if len(phrase.split()) >= 3:
            hit = any(phrase in chunk for chunk in chunks)
        else:
            hit = any(chunk.strip(" :*") == phrase for chunk in chunks)
        if hit:
            found.add(str(entry))
    return found


@pytest.fixture
def shop_history(db) -> None:
    """One row of every kind, so each model's change page can be opened."""
    now = timezone.now()
    product = Product.objects.create(product_id=7001, title="Winterzauber", status="active")
    for item_id, title in ((808950810, "klein"), (808950811, "groß")):
        Variant.objects.create(
            inventory_item_id=item_id, variant_id=item_id + 1, product=product, title=title
        )
        StockLevel.objects.create(
            inventory_item_id=item_id, location_id=1, available=0, updated_at=now
        )
    Location.objects.create(location_id=1, name="Lager Hamburg", fulfills_online_orders=True)
    item = AdGroup.objects.create(
        customer_id="1234567890", ad_group_id="158962471302", name="Winterzauber Suche",
        campaign_name="Kerzen Winter",
    )  # fmt: skip
    watched = WatchedProduct.objects.create(product_id=7001, label="Winterzauber")
    watched.ad_groups.set([item])
    apply.evaluate(apply.lock_products([watched.pk]))  # its decision, shown as German words
    result = notes.join(
        notes.note("total_available", total=0),
        notes.note(
            "ad_group_unchanged", ad_group=item.ad_group_id, status=notes.note("status_paused")
        ),
        notes.note("manual_holds", held=[notes.note("manual_held", label="Winterzauber",
                                                     status=notes.note("state_paused"))]),
    )  # fmt: skip
    delivery = Delivery.objects.create(
        source=Delivery.Source.SHOPIFY, topic="inventory_levels/update", body=b'{"available": 0}',
        status=Delivery.Status.DONE, result=notes.text_of(result), result_note=result.stored(),
    )  # fmt: skip
    AdGroupAction.objects.create(
        customer_id=item.customer_id, ad_group_id=item.ad_group_id,
        desired_status=AdGroupAction.Status.PAUSED, reason="Winterzauber: 0 ≤ 0",
        source=AdGroupAction.Source.WEBHOOK, delivery=delivery,
        result=AdGroupAction.Result.APPLIED, requested_at=now,
    )  # fmt: skip
    checkout = CheckoutState.objects.create(
        source=CheckoutState.Source.SHOPIFY, token="b7d1c0a9", email="kundin@example.com",
        updated_at=now, total_price=Decimal("40.00"), currency="EUR",
    )  # fmt: skip
    ReminderDecision.objects.create(
        checkout=checkout, checkout_version=now, inputs={}, margin=Decimal("20"),
        discount_cost=Decimal("0"), delta_plain=Decimal("1"), delta_discount=Decimal("0.5"),
        arm="plain", reason="–",
    )  # fmt: skip
    ReminderSettings.load()
    MarginRule.objects.create(rate=Decimal("0.5"), sku="WZ-24")
    promotion = Promotion.objects.create(
        name="Adventsaktion", start_date=date(2026, 12, 1), start_time=time(8),
        end_date=date(2026, 12, 24), end_time=time(18),
    )  # fmt: skip
    PromotionAdGroup.objects.create(
        promotion=promotion, customer_id=item.customer_id, ad_group_id=item.ad_group_id
    )
    ReconcileRun.objects.create(local_date=date(2026, 12, 1), started_at=now)
    Claim.objects.create(key="reminder:demo", created_at=now, expires_at=now + timedelta(days=7))
    SuppressedAddress.objects.create(email="weg@example.com")
    DataRequest.objects.create(shop_domain="elbkerzen.myshopify.com", orders_requested=[])
    DashboardSettings.load()
    BrakeSettings.load()
    episode = BrakeEpisode.objects.create(started_at=now, reason="–")
    HeldChange.objects.create(
        episode=episode, customer_id=item.customer_id, ad_group_id=item.ad_group_id,
        desired_status=AdGroupAction.Status.PAUSED, reason="Winterzauber: 0 ≤ 0",
        source=AdGroupAction.Source.WEBHOOK, held_at=now,
    )  # fmt: skip


def admin_pages(user: User) -> list[str]:
    """Every admin page the merchant can open: index, lists, add and one change page each."""
    pages = [
        reverse("admin:index"),
        reverse("admin:app_list", args=["automation"]),
        reverse("dashboard"),
        SETUP_PAGE,
    ]
    for model in admin.site._registry:
        if model._meta.app_label != "automation":
            continue
        info = (model._meta.app_label, model._meta.model_name)
        pages.append(reverse("admin:{}_{}_changelist".format(*info)))
        pages.append(reverse("admin:{}_{}_add".format(*info)))
        row = model._default_manager.order_by("pk").first()
        assert row is not None, f"no {model.__name__} row to open: add one in shop_history"
        pages.append(reverse("admin:{}_{}_change".format(*info), args=[row.pk]))
    return pages


def test_no_admin_page_shows_an_english_string_of_our_catalogue(client, settings, shop_history):
    # Given the merchant's admin in German, and the catalogue's English phrases
    settings.LANGUAGE_CODE = "de"
    user = User.objects.create_superuser("chefin", "chefin@elbkerzen.example", "x")
    client.force_login(user)
    phrases = english_phrases(read_catalogue(CATALOGUE))
    # When every page is opened (redirects followed: the reminder settings' list is its form)
    found: dict[str, set[str]] = {}
    for url in admin_pages(user):
        response = client.get(url, HTTP_ACCEPT_LANGUAGE="de", follow=True)
        if url == SETUP_PAGE and response.status_code == 404:
            continue
        if response.status_code == 403:
            continue  # a record's add page: the admin refuses it, nothing to read
        assert response.status_code == 200, f"{url}: {response.status_code}"
        html = response.content.decode()
        assert 'lang="de"' in html, f"{url} is not in German"
        if leaked := leaks(html, phrases):
            found[url] = leaked
    # Then none shows English from our catalogue
    report = "\n".join(
        f"{url}:\n" + "\n".join(f"  {entry}" for entry in sorted(entries))
        for url, entries in found.items()
    )
    assert not found, f"English strings on German pages (translate them in django.po):\n{report}"


def test_the_check_finds_an_english_string():
    """The page check itself: an English column header and sentence are found, German is not."""
    entries = read_catalogue(CATALOGUE)
    phrases = english_phrases(entries)
    page = "<th>what it caused</th><p>No discount code configured: reminders are sent</p>"
    assert len(leaks(page, phrases)) == 2
    assert not leaks("<th>Ausgelöst</th><body class='body'>", phrases)
