"""Who may open the set-up page, the dashboard, the pickers and the admin's own buttons.

Given every such URL (read from the URLconf and the admin's registry, so a new one cannot be
left out), when a staff user without permissions or a view-only user tries each of them, then
every action answers 403 and nothing runs: no request reaches the Shopify or the Ads stand-in,
no mail leaves, no row changes. A view-only user reads the pages without their buttons and
without the alert recipients; a user with an action's permission runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from django.contrib import admin
from django.core import mail
from django.urls import URLResolver, get_resolver, resolve, reverse
from django.utils import timezone

from automation.models import (
    AdGroup,
    AdGroupAction,
    BrakeEpisode,
    ConnectionSettings,
    HeldChange,
    Product,
    Variant,
    WatchedProduct,
)
from automation.ui.dashboard import demo
from automation.ui.setup import views as setup_views
from tests.support import people
from tests.support.watching import watch
from tests.ui.test_setup import CUSTOMER, EN, account, shop  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

ALERTS = "inhaberin@elbkerzen.example"
STANDARD_ADMIN_PAGES = ("changelist", "add", "history", "delete", "change")


@dataclass(frozen=True)
class Call:
    """One request to a staff URL: `name` as reverse() takes it, the object it is about."""

    name: str
    method: str = "post"
    data: dict[str, str] = field(default_factory=dict)
    about: str = ""  # "product" or "group": the watched product's or ad group's page; "held":
    # the held change the confirmation page showed, posted back
    reads: bool = False  # only shows: a view-only user may read it

    def url(self, world: World) -> str:
        if self.about in ("", "held"):
            return reverse(self.name)
        pk = world.product.pk if self.about == "product" else world.group.pk
        return reverse(self.name, args=[pk, "pause"])

    def send(self, client, world: World):
        send = client.post if self.method == "post" else client.get
        data = {**self.data, "change": str(world.held.pk)} if self.about == "held" else self.data
        return send(self.url(world), data, **EN)

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.name} {self.data.get('action', '')}".strip()


CALLS = [
    Call("dashboard", "get", reads=True),
    Call("setup", "get", reads=True),
    *(Call("setup", data={"action": action}) for action in setup_views.ACTIONS),
    Call("setup-pick-products", "get", {"q": "winter"}),
    Call("setup-pick-ad-groups", "get", {"q": "winter"}),
    Call("setup-google-callback", "get", {"state": "s", "code": "c"}),
    Call("dashboard-demo-remove"),
    Call("admin:automation_watchedproduct_manual", "get", about="product"),
    Call("admin:automation_watchedproduct_manual", data={"reason": "Test"}, about="product"),
    Call("admin:automation_adgroup_manual", data={"reason": "Test"}, about="group"),
    Call("admin:automation_heldchange_apply_all", "get"),
    Call("admin:automation_heldchange_apply_all", data={"confirm": "yes"}, about="held"),
    Call("admin:automation_heldchange_discard_all", "get"),
    Call("admin:automation_heldchange_discard_all", data={"confirm": "yes"}, about="held"),
    Call("admin:automation_remindersettings_preview", "get", reads=True),
    Call("admin:automation_remindersettings_test_mail", data={"arm": "plain"}),
]
OWN_ADDRESS_PAGE = "setup-email"
"""Every staff user may give their own address (for the alerts), and only their own."""


def staff_url_names() -> set[str]:
    """Every URL under /admin/ that is ours: the project's own pages, and the admin's own
    buttons (what our model admins add to Django's standard pages). django-rq's pages are for
    superusers only (tests/ui/test_rq_dashboard.py)."""
    names: set[str] = set()

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                if pattern.namespace not in ("admin", "django_rq"):
                    walk(pattern.url_patterns, route)
            elif route.startswith("admin/"):
                names.add(pattern.name)

    walk(get_resolver().url_patterns, "")
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        if meta.app_label != "automation":
            continue
        standard = {f"{meta.app_label}_{meta.model_name}_{page}" for page in STANDARD_ADMIN_PAGES}
        names |= {
            f"admin:{pattern.name}"
            for pattern in model_admin.get_urls()
            if pattern.name and pattern.name not in standard
        }
    return names


@dataclass
class World:
    """What the buttons would act on: a watched product, an ad group, a held change, the demo."""

    product: WatchedProduct
    group: AdGroup
    held: HeldChange


@pytest.fixture
def world(shop, account, settings):  # noqa: F811
    settings.ALERT_EMAILS = [ALERTS]
    product = watch(808950810, "555", label="Winterzauber", customer_id=CUSTOMER)
    watch(808950811, "556", label="Sommerwiese", customer_id=CUSTOMER)
    episode = BrakeEpisode.objects.create(started_at=timezone.now(), reason="–")
    held = HeldChange.objects.create(
        episode=episode,
        customer_id=CUSTOMER,
        ad_group_id="556",
        desired_status=AdGroupAction.Status.PAUSED,
        reason="Sommerwiese: 0 ≤ 0",
        source=AdGroupAction.Source.WEBHOOK,
        held_at=timezone.now(),
    )
    demo.create_demo_products()
    return World(product, AdGroup.objects.get(ad_group_id="555"), held)


def rows() -> dict[str, object]:
    """What any of the buttons would change in the database."""
    return {
        "watched": sorted(WatchedProduct.objects.values_list("pk", "label")),
        "groups": sorted(AdGroup.objects.values_list("ad_group_id", "manual_status")),
        "held": sorted(HeldChange.objects.values_list("pk", "resolution")),
        "actions": AdGroupAction.objects.count(),
        "catalogue": (Product.objects.count(), Variant.objects.count()),
        "connections": ConnectionSettings.objects.count(),
    }


# --- every URL is walked, every page of ours wears the rule -----------------------------------


def test_every_staff_url_is_walked_here():
    assert staff_url_names() == {call.name for call in CALLS} | {OWN_ADDRESS_PAGE}


def test_any_staff_user_gives_only_their_own_address(client, world):
    user = people.staff()
    client.force_login(user)
    before = rows()

    assert client.get(reverse(OWN_ADDRESS_PAGE), **EN).status_code == 200
    answer = client.post(
        reverse(OWN_ADDRESS_PAGE), {"email": "lager@elbkerzen.example", "next": "/admin/"}
    )

    assert answer.status_code == 302
    user.refresh_from_db()
    assert user.email == "lager@elbkerzen.example"
    assert rows() == before


def test_every_page_of_ours_is_guarded_by_page_access():
    for name in staff_url_names():
        if not name.startswith("admin:"):  # the admin's own ask their model admin
            assert hasattr(resolve(reverse(name)).func, "access_rule"), name


# --- (a) and (b): nothing runs ----------------------------------------------------------------


@pytest.mark.parametrize(
    "make_user", [people.staff, people.view_only], ids=["no permissions", "view only"]
)
def test_without_the_permission_every_action_is_403_and_nothing_runs(
    client,
    world,
    shop,  # noqa: F811
    account,  # noqa: F811
    make_user,
):
    user = make_user(email="mitarbeiter@elbkerzen.example")
    client.force_login(user)
    subscriptions = list(shop.subscriptions)
    before = rows()

    for call in CALLS:
        response = call.send(client, world)

        reads = call.reads and make_user is people.view_only
        assert response.status_code == (200 if reads else 403), call

    assert shop.requests == [] and shop.subscriptions == subscriptions
    assert account.requests == [] and account.searches == []
    assert mail.outbox == []
    assert rows() == before
    assert demo.demo_present()


def test_a_view_only_user_reads_the_pages_without_buttons_or_alert_recipients(
    client,
    world,  # noqa: F811
):
    client.force_login(people.view_only())

    setup = client.get(reverse("setup"), **EN).content.decode()
    dashboard = client.get(reverse("dashboard"), **EN).content.decode()
    index = client.get(reverse("admin:index"), **EN).content.decode()

    for section in ("shopify", "google_ads", "email", "stripe"):
        assert f'id="setup-{section}"' in setup
    assert 'name="action"' not in setup
    assert ALERTS not in setup and "Alert recipients" not in setup
    for section in ("reaction", "reminders", "health"):
        assert f'id="{section}"' in dashboard
    assert reverse("dashboard-demo-remove") not in dashboard
    assert f'href="{reverse("setup")}"' in index and f'href="{reverse("dashboard")}"' in index


def test_staff_without_permissions_get_no_links_to_the_pages(client, world):
    client.force_login(people.staff())

    index = client.get(reverse("admin:index"), **EN).content.decode()

    assert f'href="{reverse("setup")}"' not in index
    assert f'href="{reverse("dashboard")}"' not in index


def test_each_section_shows_only_to_those_who_may_see_its_rows(client, world):
    client.force_login(people.staff("view_delivery", "view_reminderdecision"))

    setup = client.get(reverse("setup"), **EN).content.decode()
    dashboard = client.get(reverse("dashboard"), **EN).content.decode()

    assert 'id="setup-shopify"' in setup and 'id="setup-stripe"' in setup
    assert 'id="setup-google_ads"' not in setup and 'id="setup-email"' not in setup
    assert 'id="reminders"' in dashboard
    assert 'id="reaction"' not in dashboard and 'id="health"' not in dashboard


def test_a_superuser_passes_every_rule(client, world, shop):  # noqa: F811
    client.force_login(people.superuser())

    setup = client.get(reverse("setup"), **EN).content.decode()

    # four tests, three connection forms, "Connect with Google"; "Set up now" after a test
    assert setup.count('name="action"') == 8
    assert ALERTS in setup


# --- (c): with the permission, the action runs ------------------------------------------------

Ran = Callable[[World, object, object, object], bool]


def _setup(action: str) -> Call:
    return Call("setup", data={"action": action})


ALLOWED: list[tuple[Call, tuple[str, ...], Ran]] = [
    (
        _setup("shopify_test"),
        ("view_delivery", "change_delivery"),
        lambda world, shopify, ads, page: bool(shopify.requests) and "Elbkerzen" in page,
    ),
    (
        _setup("shopify_webhooks"),
        ("view_delivery", "change_delivery"),
        lambda world, shopify, ads, page: len(shopify.subscriptions) > 2,
    ),
    (
        _setup("google_ads_test"),
        ("view_adgroup", "change_adgroup"),
        lambda world, shopify, ads, page: bool(ads.searches),
    ),
    (
        _setup("email_test"),
        ("view_remindersettings", "change_remindersettings"),
        lambda world, shopify, ads, page: len(mail.outbox) == 1,
    ),
    (
        _setup("shopify_save"),
        ("view_delivery", "change_connectionsettings"),
        lambda world, shopify, ads, page: ConnectionSettings.objects.exists(),
    ),
    (
        _setup("google_ads_save"),
        ("view_adgroup", "change_connectionsettings"),
        lambda world, shopify, ads, page: ConnectionSettings.objects.exists(),
    ),
    (
        _setup("google_connect"),
        ("view_adgroup", "change_connectionsettings"),
        lambda world, shopify, ads, page: "Enter the OAuth client id" in page,
    ),
    (
        _setup("google_ads_accounts"),
        ("view_adgroup", "change_connectionsettings"),
        lambda world, shopify, ads, page: bool(ads.accessible_calls),
    ),
    (
        Call("setup-pick-products", "get", {"q": "winter"}),
        ("add_watchedproduct",),
        lambda world, shopify, ads, page: "Winterzauber" in page,
    ),
    (
        Call("setup-pick-products", "get", {"q": "winter"}),
        ("change_watchedproduct",),
        lambda world, shopify, ads, page: "Winterzauber" in page,
    ),
    (
        Call("setup-pick-ad-groups", "get", {"q": "winter"}),
        ("add_adgroup",),
        lambda world, shopify, ads, page: "Winterzauber Suche" in page,
    ),
    (
        Call("dashboard-demo-remove"),
        ("delete_watchedproduct",),
        lambda world, shopify, ads, page: not demo.demo_present(),
    ),
    (
        Call("admin:automation_watchedproduct_manual", data={"reason": "Test"}, about="product"),
        ("change_watchedproduct",),
        lambda world, shopify, ads, page: (
            AdGroup.objects.get(pk=world.group.pk).manual_status == AdGroupAction.Status.PAUSED
        ),
    ),
    (
        Call("admin:automation_adgroup_manual", data={"reason": "Test"}, about="group"),
        ("change_adgroup",),
        lambda world, shopify, ads, page: (
            AdGroup.objects.get(pk=world.group.pk).manual_status == AdGroupAction.Status.PAUSED
        ),
    ),
    (
        Call("admin:automation_heldchange_discard_all", data={"confirm": "yes"}, about="held"),
        ("change_heldchange",),
        lambda world, shopify, ads, page: (
            HeldChange.objects.get(pk=world.held.pk).resolution == HeldChange.Resolution.DISCARDED
        ),
    ),
]


@pytest.mark.parametrize(
    ("call", "permissions", "ran"),
    ALLOWED,
    ids=[f"{call} with {'+'.join(perms)}" for call, perms, _ in ALLOWED],
)
def test_with_the_permission_the_action_runs(
    client,
    world,
    shop,  # noqa: F811
    account,  # noqa: F811
    call,
    permissions,
    ran,
):
    client.force_login(people.staff(*permissions, email="mitarbeiter@elbkerzen.example"))

    response = call.send(client, world)

    # the set-up page and the pickers answer with the page; the other actions redirect back
    assert response.status_code == (200 if call.method == "get" or call.name == "setup" else 302)
    assert ran(world, shop, account, response.content.decode())


def test_a_button_needs_its_section_too(client, world, shop):  # noqa: F811
    """Allowed to change deliveries but not to see them (the Shopify section): no test runs."""
    client.force_login(people.staff("view_adgroup", "change_delivery"))

    response = client.post(reverse("setup"), {"action": "shopify_test"}, **EN)

    assert response.status_code == 403
    assert shop.requests == []
