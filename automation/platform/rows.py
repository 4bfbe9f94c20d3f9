"""Rows on the hot paths: run a written-out statement, INSERT with a statement built once per
model, load a RETURNING row.

Everything here is kept for speed only; the ORM would be as correct. `insert()` builds each
INSERT once and skips the model instance (docs/PERFORMANCE.md, "Prepared INSERTs"); `load()`
skips `objects.raw()` resolving the columns anew for every row (docs/PERFORMANCE.md,
"Hand-written claim statement"); `execute()` lets psycopg prepare the statements
(docs/PERFORMANCE.md, "psycopg's own cursor"). Values still go through the model's fields, so a
row equals what `create()` would write; no signals are sent (no receivers on these models).
"""

import functools
from collections.abc import Callable, Collection, Sequence
from typing import Any, NamedTuple, TypeVar

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model
from django.db.models.expressions import Col
from django.utils import timezone

M = TypeVar("M", bound=Model)


class _Column(NamedTuple):
    field: Field
    stamped: bool  # auto_now / auto_now_add: the time of the INSERT unless given


def insert(model: type[Model], **values: Any) -> int:
    """INSERT a row of `model` from field values (a related row by instance) and return its pk."""
    columns = _columns(model)
    unknown = values.keys() - columns.keys()
    if unknown:
        raise TypeError(f"{model.__name__} has no field(s) {', '.join(sorted(unknown))}")
    connection = connections[DEFAULT_DB_ALIAS]  # the wrapper itself: one proxy lookup, not 20
    now = timezone.now()
    params = []
    for name, (field, stamped) in columns.items():
        if name in values:
            value = values[name]
            if isinstance(value, Model):
                value = value.pk
        else:
            value = now if stamped else field.get_default()
        params.append(field.get_db_prep_save(value, connection))
    returning = connection.features.can_return_columns_from_insert
    if returning:
        return execute(_insert_sql(model, returning), params)[0][0]
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(model, returning), params)
        return cursor.lastrowid


def execute(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Run one written-out hot-path statement; its rows ([] when it returns none).

    On PostgreSQL it goes to psycopg's own cursor with server-side binding (which the
    field-prepared values suit, as Django's `server_side_binding` option shows), skipping the
    Python of Django's wrapper and letting psycopg prepare it (`DATABASE_PREPARED_STATEMENTS`;
    docs/PERFORMANCE.md, "psycopg's own cursor"). What that wrapper does that matters is kept:
    connect if needed, refuse a broken transaction, Django's error classes. Where queries are
    logged (DEBUG, assertNumQueries) or wrapped, Django's cursor runs them.
    """
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor == "postgresql" and _plain(connection):
        connection.ensure_connection()
        connection.validate_no_broken_transaction()
        with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
            cursor.execute(sql, params)
            return _fetched(cursor)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def execute_many(sql: str, params_seq: Sequence[Sequence[Any]]) -> list[list[tuple[Any, ...]]]:
    """Run one written-out statement once per parameter set; each run's rows, in order.

    For a backlog batch's stock levels and outcomes. On PostgreSQL psycopg sends them all in
    pipeline mode, each with its own result: two round trips however many there are (psycopg
    waits for the results, then for the pipeline's end), so a single set goes through
    `execute()` (one). Elsewhere, and where queries are logged, they run one after another.
    Meant for inside a transaction: outside one, psycopg's pipeline commits them together.
    """
    if len(params_seq) <= 1:
        return [execute(sql, params) for params in params_seq]
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor == "postgresql" and _plain(connection):
        connection.ensure_connection()
        connection.validate_no_broken_transaction()
        with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
            cursor.executemany(sql, params_seq, returning=True)
            results = [_fetched(cursor)]
            while cursor.nextset():
                results.append(_fetched(cursor))
            return results
    return [execute(sql, params) for params in params_seq]


def _fetched(cursor: psycopg.Cursor) -> list[tuple[Any, ...]]:
    """The rows of the cursor's current result, [] for a statement that returns none.

    Asks the result's status, not `cursor.description`: building the description (an object
    per column, 20 for the claim's RETURNING) is a large part of a claim that finds nothing
    (docs/PERFORMANCE.md, "Empty claim without a column description").
    """
    result = cursor.pgresult
    if result is None or result.status != psycopg.pq.ExecStatus.TUPLES_OK:
        return []
    return cursor.fetchall()


def _plain(connection: BaseDatabaseWrapper) -> bool:
    """No query logging and no execute wrappers that must see the statement."""
    return not connection.queries_logged and not connection.execute_wrappers


@functools.cache
def _columns(model: type[Model]) -> dict[str, _Column]:
    return {
        field.name: _Column(
            field, bool(getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False))
        )
        for field in model._meta.concrete_fields
        if not field.primary_key
    }


@functools.cache
def _insert_sql(model: type[Model], returning: bool) -> str:
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    fields = [column.field for column in _columns(model).values()]
    columns = ", ".join(quote(field.column) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({placeholders})"  # noqa: S608
    return f"{sql} RETURNING {quote(model._meta.pk.column)}" if returning else sql


def among(column: str, values: Collection[Any]) -> tuple[str, list[Any]]:
    """`column` is one of `values`: the condition and its parameters for a written-out statement.

    On PostgreSQL `= ANY(%s)` with one array parameter, so the statement's text is the same
    for any count and psycopg prepares it once; elsewhere `IN (%s, …)` (nothing matches none).
    """
    if connections[DEFAULT_DB_ALIAS].vendor == "postgresql":
        return f"{column} = ANY(%s)", [list(values)]
    if not values:
        return "1 = 0", []
    return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)


def update(model: type[Model], pk: Any, **values: Any) -> int:
    """UPDATE one row of `model` by pk from field values (prepared like `insert`); rows changed."""
    connection = connections[DEFAULT_DB_ALIAS]
    columns = _columns(model)
    names = tuple(values)
    params = [columns[name].field.get_db_prep_save(values[name], connection) for name in names]
    found = execute(_update_sql(model, names), [*params, pk])
    return len(found)


@functools.cache
def _update_sql(model: type[Model], names: tuple[str, ...]) -> str:
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    fields = [model._meta.get_field(name) for name in names]
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    pk = quote(model._meta.pk.column)
    return (
        f"UPDATE {quote(model._meta.db_table)} SET {assignments} "  # noqa: S608 (model names)
        f"WHERE {pk} = %s RETURNING {pk}"
    )


def column(model: type[Model], name: str) -> str:
    """The quoted column of `model`'s field `name`, for a written-out statement."""
    return connections[DEFAULT_DB_ALIAS].ops.quote_name(model._meta.get_field(name).column)


def table(model: type[Model]) -> str:
    """The quoted table of `model`, for a written-out statement."""
    return connections[DEFAULT_DB_ALIAS].ops.quote_name(model._meta.db_table)


@functools.cache
def columns(model: type[Model], alias: str = "") -> str:
    """Every concrete column of `model`, quoted (of the table `alias` where given), in field
    order: what `load()` expects back."""
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    prefix = f"{alias}." if alias else ""
    return ", ".join(f"{prefix}{quote(field.column)}" for field in model._meta.concrete_fields)


def load(model: type[M], row: Sequence[Any]) -> M:
    """The instance the ORM would load from `row` (the values of `columns(model)`)."""
    connection = connections[DEFAULT_DB_ALIAS]
    values = list(row)
    for position, column, converters in _converters(model, connection):
        for convert in converters:
            values[position] = convert(values[position], column, connection)
    return model.from_db(connection.alias, _attnames(model), values)


@functools.cache
def _attnames(model: type[Model]) -> tuple[str, ...]:
    return tuple(field.attname for field in model._meta.concrete_fields)


# Per connection object: a backend's converters are bound to its own operations instance.
@functools.lru_cache(maxsize=32)
def _converters(
    model: type[Model], connection: BaseDatabaseWrapper
) -> list[tuple[int, Col, list[Callable[..., Any]]]]:
    found = []
    for position, field in enumerate(model._meta.concrete_fields):
        column = field.get_col(model._meta.db_table)
        converters = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if converters:
            found.append((position, column, converters))
    return found
