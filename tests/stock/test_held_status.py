"""A pause the safety brake holds says so in the status columns ("zurückgehalten (Notbremse)"),
never "pausiert seit …": through the brake's real path, on the watched products' list and the
ad groups' list; once decided, the column says what was done."""

import re

import pytest

from automation.stock import held_changes
from tests.support.brake import sell_out_burst

pytestmark = pytest.mark.django_db

DE = {"HTTP_ACCEPT_LANGUAGE": "de"}


def row_of(html: str, text: str) -> str:
    """The list's table row that contains `text`."""
    for row in re.findall(r"<tr.*?</tr>", html, flags=re.S):
        if text in row:
            return row
    raise AssertionError(f"no row with {text!r}")


def test_a_held_pause_says_so_in_both_lists(admin_client):
    held = sell_out_burst()
    change = held[-1]
    label = f"Kerze {int(change.ad_group_id) - 800}"

    products = admin_client.get("/admin/automation/watchedproduct/", **DE).content.decode()
    row = row_of(products, f">{label}</a>")
    assert "zurückgehalten (Notbremse) – Bestand 0" in row
    assert "pausiert" not in row

    groups = admin_client.get("/admin/automation/adgroup/", **DE).content.decode()
    row = row_of(groups, f"{label} Suche")
    assert "zurückgehalten (Notbremse)" in row and "pausiert" not in row

    paused = row_of(products, ">Kerze 0</a>")  # the first sell-outs were sent
    assert "pausiert seit" in paused and "zurückgehalten" not in paused


def test_a_discarded_hold_is_no_longer_shown_as_held(admin_client, admin_user):
    held = sell_out_burst()
    held_changes.discard(held_changes.open_changes(), admin_user)
    products = admin_client.get("/admin/automation/watchedproduct/", **DE).content.decode()
    assert "zurückgehalten" not in products
    label = f"Kerze {int(held[-1].ad_group_id) - 800}"
    assert "läuft – Bestand 0" in row_of(products, f">{label}</a>")
