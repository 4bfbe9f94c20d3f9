"""The test shop's imprint: reminders are sent only with one, so every test database has it."""

import pytest

TEST_IMPRINT = "Elbkerzen Testbetrieb\nHafenstraße 1, 20457 Hamburg\nkontakt@elbkerzen.example"

DB_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}
)


def uses_database(request: pytest.FixtureRequest) -> bool:
    """Whether the test reaches the database (a marker or a fixture that needs it)."""
    return bool(
        request.node.get_closest_marker("django_db") or DB_FIXTURES & set(request.fixturenames)
    )


def give_imprint(request: pytest.FixtureRequest) -> None:
    """Write the imprint into the reminder settings of a test that uses the database."""
    if not uses_database(request):
        return
    request.getfixturevalue("db")
    from automation.models import ReminderSettings

    ReminderSettings.objects.update_or_create(pk=1, defaults={"mail_imprint": TEST_IMPRINT})
