""" "Apply all", "Discard all" and the list's actions ask first: a GET (or a POST without the
confirmation) says how many changes and which ad groups, and decides nothing; only the
confirming POST decides, and only the changes that page showed."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission

from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import AdGroupAction, HeldChange
from tests.support.brake import FIRST_ITEM, MORNING, STORE, sell_out_burst
from tests.support.levels import apply_level

pytestmark = pytest.mark.django_db

LIST = "/admin/automation/heldchange/"
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def still_open() -> int:
    return HeldChange.objects.filter(resolution="open").count()


@pytest.mark.parametrize("how", ["apply", "discard"])
def test_a_get_says_what_will_happen_and_decides_nothing(admin_client, how):
    held = sell_out_burst()
    page = admin_client.get(f"{LIST}{how}-all/", **EN)
    assert page.status_code == 200
    html = page.content.decode()
    if how == "apply":
        assert f"{len(held)} held changes will be applied" in html
    else:
        assert f"{len(held)} held changes will be discarded: nothing is sent" in html
    for change in held:
        assert f"{change.ad_group_id}" in html
    assert 'ad group <span title="id 803">Kerze 3 Suche</span>' in html  # by name, id on hover
    assert 'name="confirm" value="yes"' in html and "Cancel" in html
    assert still_open() == len(held)


@pytest.mark.parametrize("how", ["apply", "discard"])
def test_a_post_without_the_confirmation_decides_nothing(admin_client, how):
    held = sell_out_burst()
    answer = admin_client.post(f"{LIST}{how}-all/", **EN)
    assert answer.status_code == 200
    assert still_open() == len(held)


def test_discard_all_confirmed_discards_what_the_page_showed_only(admin_client, admin_user):
    held = sell_out_burst()
    shown = [change.pk for change in held]
    # a pause held after the page was shown: it waits for its own decision
    late = LevelUpdate(FIRST_ITEM + 7, STORE, 0, MORNING + timedelta(minutes=3))
    apply_level(late, source=AdGroupAction.Source.WEBHOOK)
    assert still_open() == len(held) + 1

    answer = admin_client.post(f"{LIST}discard-all/", {"confirm": "yes", "change": shown})

    assert answer.status_code == 302
    assert HeldChange.objects.filter(pk__in=shown, resolution="discarded").count() == len(held)
    assert HeldChange.objects.filter(resolution="open").get().ad_group_id == "807"
    assert HeldChange.objects.filter(resolved_by=admin_user).count() == len(held)


def test_apply_all_confirmed_applies(admin_client):
    held = sell_out_burst()
    answer = admin_client.post(
        f"{LIST}apply-all/", {"confirm": "yes", "change": [c.pk for c in held]}
    )
    assert answer.status_code == 302
    assert HeldChange.objects.filter(resolution="applied").count() == len(held)


def test_the_selected_action_asks_first_too(admin_client):
    held = sell_out_burst()
    first = held[0]
    asked = admin_client.post(
        LIST, {"action": "discard_selected", "_selected_action": [first.pk]}, **EN
    )
    assert asked.status_code == 200
    assert "1 held change will be discarded" in asked.content.decode()
    assert still_open() == len(held)

    admin_client.post(
        LIST, {"action": "discard_selected", "_selected_action": [first.pk], "confirm": "yes"}
    )
    assert HeldChange.objects.get(pk=first.pk).resolution == "discarded"
    assert still_open() == len(held) - 1


def test_the_buttons_lead_to_the_confirmation(admin_client):
    sell_out_burst()
    html = admin_client.get(LIST).content.decode()
    assert f'href="{LIST}apply-all/" data-testid="apply-all"' in html
    assert f'href="{LIST}discard-all/" data-testid="discard-all"' in html


def test_who_may_only_look_may_not_decide(client, django_user_model):
    held = sell_out_burst()
    viewer = django_user_model.objects.create_user(
        "aushilfe", email="aushilfe@elbkerzen.example", is_staff=True
    )
    viewer.user_permissions.add(Permission.objects.get(codename="view_heldchange"))
    client.force_login(viewer)
    assert client.get(f"{LIST}discard-all/").status_code == 403
    answer = client.post(f"{LIST}discard-all/", {"confirm": "yes", "change": [held[0].pk]})
    assert answer.status_code == 403
    assert still_open() == len(held)
