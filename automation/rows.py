"""INSERT a new model row with a statement built once per model: the hot paths' one write.

`Model.objects.create()` compiles its INSERT anew on every call, which on the intake cost more
than the round trip itself (bench/findings.md, change 4). Values
still come from the model's fields (defaults, `auto_now_add`, conversion), so the row equals
what `create()` would write; no signals are sent (the project has no receivers on these models).
"""

import functools
from typing import TypeVar

from django.db import connection
from django.db.models import Field, Model

M = TypeVar("M", bound=Model)


def insert(instance: M) -> M:
    """INSERT `instance` as a new row and set its primary key."""
    model = type(instance)
    fields = _fields(model)
    params = [
        field.get_db_prep_save(field.pre_save(instance, True), connection) for field in fields
    ]
    returning = connection.features.can_return_columns_from_insert
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(model, returning), params)
        instance.pk = cursor.fetchone()[0] if returning else cursor.lastrowid
    instance._state.adding = False
    instance._state.db = connection.alias
    return instance


@functools.cache
def _fields(model: type[Model]) -> list[Field]:
    return [field for field in model._meta.concrete_fields if not field.primary_key]


@functools.cache
def _insert_sql(model: type[Model], returning: bool) -> str:
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in _fields(model))
    placeholders = ", ".join(["%s"] * len(_fields(model)))
    sql = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({placeholders})"  # noqa: S608
    return f"{sql} RETURNING {quote(model._meta.pk.column)}" if returning else sql
