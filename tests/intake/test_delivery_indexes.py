"""Delivery's pseudonym indexes hold only rows that carry a pseudonym, and redaction uses them.

Indexed in full, every claim and outcome UPDATE of a delivery without a customer (every stock
level) added an entry for "" to each of them (docs/PERFORMANCE.md, "Partial pseudonym indexes").
"""

import pytest
from django.db import connection

from automation.models import Delivery

pytestmark = [
    pytest.mark.django_db,
    # Django adds the varchar_pattern_ops twins only on PostgreSQL, and the plan is its planner's.
    pytest.mark.postgres(reason="reads PostgreSQL's catalogue (pg_indexes) and query plans"),
]

REFS = ("customer_ref", "customer_id_ref", "phone_ref")


def index_definitions(column: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = %s AND indexdef LIKE %s",
            [Delivery._meta.db_table, f"%({column}%"],
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.parametrize("column", REFS)
def test_each_pseudonym_has_one_index_and_it_leaves_out_the_empty_value(column):
    definitions = index_definitions(column)
    assert len(definitions) == 1  # no varchar_pattern_ops twin: nobody looks refs up by LIKE
    assert f"WHERE (NOT (({column})::text = ''::text))" in definitions[0]


def test_the_redaction_lookup_by_any_pseudonym_can_use_them():
    lookup = (
        Delivery.objects.filter(customer_id_ref="a" * 64)
        | Delivery.objects.filter(customer_ref__in=["b" * 64, "c" * 64])
        | Delivery.objects.filter(phone_ref="d" * 64)
    )
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a test table is too small to prefer them
        sql, params = lookup.query.sql_with_params()
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    for column in REFS:
        assert f"delivery_{column}" in plan
