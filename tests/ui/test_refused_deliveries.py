"""`refused` deliveries (a shop/redact we would not carry out) in the dashboard and the replay
wording: they can be replayed like failed and dead ones (automation/intake/inbox.py `replay`), so
the admin action, its German label and the API's 409 say so."""

import pytest

from automation.models import Delivery
from automation.ui.dashboard.views import STATUS_COLORS
from tests.ui.test_api import delivery, staff  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_every_delivery_status_has_a_colour_of_its_own():
    """Fails before: `refused` fell back to the `processing` colour."""
    assert set(STATUS_COLORS) == set(Delivery.Status.values)
    assert len(set(STATUS_COLORS.values())) == len(STATUS_COLORS)


def test_the_admin_replays_a_refused_delivery_and_says_so_in_german(admin_client, queue):
    """Fails before: the action was labelled "failed or dead" (German: "fehlgeschlagene oder
    aufgegebene"), though it replays refused deliveries too."""
    refused = delivery(topic="shop/redact", status="refused")
    done = delivery(status="done")
    page = admin_client.get("/admin/automation/delivery/", HTTP_ACCEPT_LANGUAGE="de")
    assert "fehlgeschlagene, aufgegebene oder abgelehnte Zustellungen" in page.content.decode()

    response = admin_client.post(
        "/admin/automation/delivery/",
        {"action": "replay", "_selected_action": [refused.pk, done.pk]},
        HTTP_ACCEPT_LANGUAGE="de",
        follow=True,
    )

    text = response.content.decode()
    assert "1 Zustellungen werden erneut verarbeitet." in text
    assert "1 übersprungen, die weder fehlgeschlagen, aufgegeben noch abgelehnt sind." in text
    refused.refresh_from_db()
    assert refused.status == Delivery.Status.RECEIVED
    assert queue.job_ids  # on its way again


def test_the_api_409_names_refused_deliveries_as_replayable(staff, queue):  # noqa: F811
    done = delivery(status="done")
    response = staff.post(f"/api/deliveries/{done.pk}/replay/")
    assert response.status_code == 409
    assert "only failed, dead or refused deliveries can be replayed" in response.data["detail"]
