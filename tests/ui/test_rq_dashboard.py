"""RQ's dashboard can delete, requeue and empty jobs: superusers only, at both its entries.

django-rq serves it under /admin/rq/ (our URLconf) and, with RQ_SHOW_ADMIN_LINK, inside the admin
under /admin/django_rq/dashboard/; out of the box both ask only for staff status.
"""

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from rq.job import Job

pytestmark = pytest.mark.django_db

ENTRIES = ["/admin/rq/", "/admin/django_rq/dashboard/"]


def signed_in(*, superuser: bool) -> Client:
    user = User.objects.create_user(
        "boss" if superuser else "operator", is_staff=True, is_superuser=superuser
    )
    if not superuser:  # every permission there is: still not enough for the dashboard
        user.user_permissions.set(Permission.objects.all())
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def job(queue) -> Job:
    """A job waiting in the default queue (queue index 0: the only one in RQ_QUEUES)."""
    return queue.enqueue("automation.jobs.sweep_deliveries")


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_visitor_is_sent_to_the_login(client, entry):
    response = client.get(entry)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


@pytest.mark.parametrize("entry", ENTRIES)
def test_staff_who_are_not_superusers_get_403(entry, job):
    response = signed_in(superuser=False).get(entry)
    assert response.status_code == 403
    assert f"{entry}queues/0/".encode() not in response.content  # no queue listed


@pytest.mark.parametrize("entry", ENTRIES)
def test_staff_who_are_not_superusers_cannot_delete_a_job(entry, job, queue):
    client = signed_in(superuser=False)
    assert client.post(f"{entry}queues/0/{job.id}/delete/").status_code == 403
    assert client.post(f"{entry}queues/0/empty/").status_code == 403
    assert queue.job_ids == [job.id]
    assert Job.exists(job.id, connection=queue.connection)


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_superuser_sees_the_dashboard_and_can_delete_a_job(entry, job, queue):
    client = signed_in(superuser=True)
    dashboard = client.get(entry)
    assert dashboard.status_code == 200
    assert f"{entry}queues/0/".encode() in dashboard.content  # the default queue, linked
    assert client.post(f"{entry}queues/0/{job.id}/delete/").status_code == 302
    assert queue.job_ids == []


def test_the_admin_lists_the_dashboard_for_superusers_only():
    assert (
        "/admin/django_rq/dashboard/" in signed_in(superuser=True).get("/admin/").content.decode()
    )
    page = signed_in(superuser=False).get("/admin/").content.decode()
    assert "/admin/django_rq/dashboard/" not in page
