"""The plan's public schema, checked against the data before any charge.

"Releases are total" (docs/architecture.md, the invariants): the column names and dtypes a plan reads are
public, so they are validated *before* the budget is charged (in ``plan.run`` and
in :meth:`~dpalg.Session.run`). A column typo or a complex column then costs
nothing, and nothing after the charge can fail because of the schema.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

import attrs

from dpalg._errors import InvalidArgument, Unsupported
from dpalg.data import ColumnUse, Dataset, check_columns
from dpalg.data._evaluation import evaluate_input
from dpalg.data._schema import column_kind
from dpalg.data._tables import From, TablesSource
from dpalg.data._expr import Expr, read_types
from dpalg.data._transform import RowSteps, apply_steps, check_steps
from dpalg.graph._compose import Compose, Parallel, PureToApprox, PureToZCDP, ZCDPToApprox
from dpalg.graph._group import GroupPrivacy
from dpalg.graph._groupby import GroupBy, KeySet
from dpalg.graph._derivation import Derivation
from dpalg.graph._node import AbstractPrimitive, SchemaChoice
from dpalg.graph._subsample import Subsample
from dpalg.queries import Query

__all__ = [
    "group_data", "group_relation", "plan_columns", "plan_schema", "primitive_source", "primitive_steps", "read_columns", "relation_data",
    "schema_choices", "shared_source", "steps_data", "validate_schema",
]  # fmt: skip


def _join(path: str, label: str) -> str:
    return f"{path}/{label}" if path else label


def plan_columns(plan: object, path: str = "") -> Iterator[tuple[str, ColumnUse]]:
    """Every column the plan reads, with the path of the node that reads it.

    ``Parallel``'s ``by`` column is read as keys, matched against its parts' keys. Unknown node types yield
    nothing here; the accountant refuses them (they are never free).
    """
    if isinstance(plan, Compose):
        here = _join(path, "Compose")
        for label, child in zip(plan.labels, plan.children):
            yield from plan_columns(child, _join(here, label))
    elif isinstance(plan, Parallel):
        here = _join(path, f"Parallel(by={plan.by!r})")
        yield here, ColumnUse(plan.by, "key", keys=tuple(key for key, _ in plan.parts))
        for key, child in plan.parts:
            yield from plan_columns(child, _join(here, repr(key)))
    elif isinstance(plan, (PureToApprox, PureToZCDP, ZCDPToApprox)):
        yield from plan_columns(plan.child, _join(path, type(plan).__name__))
    elif isinstance(plan, GroupPrivacy):
        here = _join(path, "GroupPrivacy")
        yield here, ColumnUse(plan.unit, "id")
        yield from plan_columns(plan.plan, here)
    elif isinstance(plan, Subsample):
        here = _join(path, f"Subsample(rate={plan.rate})")
        unit = plan.neighbouring.unit
        if unit is not None:
            yield here, ColumnUse(unit, "id")
        yield from plan_columns(plan.plan, here)
    elif isinstance(plan, GroupBy):
        here = _join(path, f"GroupBy(by={plan.by!r})")
        for j, name in enumerate(plan.by):
            yield here, ColumnUse(name, "key", keys=_column_keys(plan, j))
        if plan.bound is not None and plan.neighbouring.unit is not None:
            yield here, ColumnUse(plan.neighbouring.unit, "id")
        yield from plan_columns(plan.plan, here)
    elif isinstance(plan, AbstractPrimitive):
        here = _join(path, type(plan).__name__)
        for use in plan.columns():
            yield here, use


def _column_keys(plan: GroupBy[Any], j: int) -> tuple[str | int, ...] | None:
    """The public keys' parts in column ``j`` that the schema check compares with the column's type (str and int)."""
    if not isinstance(plan.keys, KeySet):
        return None
    parts = [k[j] if isinstance(k, tuple) else k for k in plan.keys.keys]
    return tuple(dict.fromkeys(p for p in parts if isinstance(p, (str, int)) and not isinstance(p, bool)))


def validate_schema(plan: object, data: Dataset) -> None:
    """Refuse ``data`` when a column the plan reads is absent or of a dtype its role cannot read, or its backend is unsupported.

    Reads names, dtypes and the kind of source only; then a lazy input (a polars
    LazyFrame, a Spark DataFrame) computes the columns the plan reads, once, so
    that the user's plan fails, if it does, before the charge
    (:func:`dpalg.data._evaluation.evaluate_input`; no value is ever shown).

    Raises:
        InvalidArgument: naming the node path, the column, its role, its
            type and the fix (missing; a type its role cannot read; public keys
            of a kind the column cannot hold: the table of
            :mod:`dpalg.data._schema`; a name Spark would resolve to two
            columns); or a lazy input whose evaluation failed (its text withheld).
        Unsupported: a node cannot run on this backend
            (:meth:`~dpalg.graph.AbstractPrimitive.check_backend`).

    Examples:
        >>> from dpalg import Query
        >>> from dpalg.mechanisms import Laplace
        >>> from dpalg.data import as_dataset
        >>> validate_schema(Laplace(Query.count("agee"), epsilon=1), as_dataset({"age": [30, 40]}))
        Traceback (most recent call last):
        ...
        dpalg._errors.InvalidArgument: Laplace: numeric column='agee' is not a column of the data; available: ['age']
    """
    _check_tables(plan, data)
    for path, use in plan_columns(plan):
        check_columns(data, (use,), owner=path)
    for node in _primitives(plan):
        node.check_backend(data)  # the backend is public too: a refusal costs nothing
        steps = primitive_steps(node)
        if steps is not None:  # the expressions type-check against the schema (of the joined relation's tables)
            check_steps(data, steps, type(node).__name__)
    _check_grouped_relations(plan)
    evaluate_input(data, plan_columns(plan))  # a lazy input (polars, Spark) runs its plan now, before the charge


def _queries(value: object, depth: int = 0) -> Iterator[Query]:
    """The queries held by a node's fields (also inside tuples and nested attrs objects, as its columns are found)."""
    if isinstance(value, Query):
        yield value
        return
    if depth > 4:
        return
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _queries(item, depth + 1)
    elif attrs.has(type(value)):
        for field in attrs.fields(cast("type[attrs.AttrsInstance]", type(value))):
            yield from _queries(getattr(value, field.name), depth + 1)


def primitive_steps(node: AbstractPrimitive[Any]) -> RowSteps | None:
    """The row transformations of the node's queries (``| Where``, a derived column), or ``None``.

    Raises:
        Unsupported: the node's queries transform the rows differently (one transformed dataset serves a node).
    """
    found = {q.row_steps() for q in _queries(node)}  # a query without steps reads the rows as given: it differs too
    if found <= {None}:
        return None
    if len(found) > 1:
        raise Unsupported(f"{type(node).__name__}: its queries transform the rows differently; give them the same Where and derived columns")
    steps = found.pop()
    assert steps is not None
    return steps


def primitive_source(node: AbstractPrimitive[Any]) -> From | None:
    """The relation the node's queries read on a multi-table input (``| From``), or ``None``.

    Raises:
        Unsupported: the node's queries read different relations.
    """
    found = {q.source for q in _queries(node)}
    if len(found) > 1:
        raise Unsupported(f"{type(node).__name__}: its queries read different relations (From); one relation serves a node")
    return found.pop() if found else None


def steps_data(node: AbstractPrimitive[Any], data: Dataset) -> Dataset:
    """The rows and columns ``node`` reads: its relation joined (several tables), then its queries' row
    transformations applied (both checked before the charge)."""
    steps = primitive_steps(node)
    if isinstance(data.source, TablesSource):
        source = primitive_source(node)
        assert source is not None  # validate_schema refused it before the charge
        # left lazy only when the steps run on the backend at once (a column read value by value, "object", takes the
        # numpy path, which reads the relation column by column: it must be evaluated once, first)
        transformed = steps is not None and "object" not in read_types(data, steps.reads(), type(node).__name__).values()
        data = data.source.join(source, [use.name for use in node.columns()], transformed=transformed)  # only the columns read
    if steps is None:
        return data
    return apply_steps(data, steps, [use.name for use in node.columns()])


def _check_tables(plan: object, data: Dataset) -> None:
    """Before the charge: on several tables every primitive names a relation the tables can build; else none does."""
    tables = data.source if isinstance(data.source, TablesSource) else None
    stack = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, Compose):
            stack.extend(node.children)
        elif isinstance(node, (PureToApprox, PureToZCDP, ZCDPToApprox)):
            stack.append(node.child)
        elif isinstance(node, GroupBy):
            if tables is not None:
                _check_relation(node, tables, node.by)
            stack.append(node.plan)
        elif isinstance(node, (Parallel, Subsample)):
            if tables is not None:
                _check_relation(node, tables, (node.by,) if isinstance(node, Parallel) else ())
            stack.extend(child for _, child in node.parts) if isinstance(node, Parallel) else stack.append(node.plan)
        elif isinstance(node, GroupPrivacy):
            if tables is not None:
                raise Unsupported("GroupPrivacy on several tables is not supported yet: run it on one table (or a joined frame)")
            stack.append(node.plan)
        elif isinstance(node, AbstractPrimitive):
            source = primitive_source(node)
            owner = type(node).__name__
            if tables is None:
                if source is not None:
                    raise Unsupported(f"{owner}: From names tables, but the data is one table: give a mapping of tables")
                continue
            if source is None:
                raise Unsupported(f"{owner}: on several tables a query names its relation with | From(table, Join(...), ...)")
            problem = tables.problem(source, node.neighbouring.unit)
            if problem is not None:
                raise InvalidArgument(owner, "From", repr(source)[:200], problem)


def _owner(node: object) -> str:
    if isinstance(node, (GroupBy, Parallel)):
        return f"{type(node).__name__}(by={node.by!r})"
    return type(node).__name__


def _check_relation(node: GroupBy[Any] | Parallel[Any] | Subsample[Any], tables: TablesSource, columns: tuple[str, ...]) -> None:
    """A structural node on several tables reads its primitives' relation: buildable, at user level, holding ``columns``."""
    owner = _owner(node)
    source = shared_source(node)
    if source is None:
        raise Unsupported(f"{owner}: on several tables its queries name their relation with | From(table, Join(...), ...)")
    problem = tables.problem(source, node.neighbouring.unit)
    if problem is not None:
        raise InvalidArgument(owner, "From", repr(source)[:200], problem)
    joined = {name for table in source.tables() for name in tables.table(table).names}
    for name in columns:
        if name not in joined:
            raise InvalidArgument(owner, "by", name[:100], f"is not a column of the tables its queries join ({', '.join(source.tables())})")


def shared_source(node: GroupBy[Any] | Parallel[Any] | Subsample[Any]) -> From | None:
    """The relation (``| From``) every query under a structural node reads, or ``None`` (one table).

    On several tables a structural node (``GroupBy``, ``Parallel``, ``Subsample``)
    splits, groups or samples the rows of that relation, joined once where the data
    is (:func:`relation_data`). The relation of a user-level query changes by one
    user's result rows when one user is added or removed (:mod:`dpalg.data._tables`),
    which is the neighbouring relation the node's own rule assumes, so its cost rule
    holds unchanged on the joined rows.

    Raises:
        Unsupported: the queries under the node read different relations.
    """
    sources = {primitive_source(child) for child in _primitives(node)}
    if len(sources) > 1:
        raise Unsupported(f"{_owner(node)}: the queries under it read different relations (From); one relation is split, grouped or sampled")
    return sources.pop() if sources else None


def relation_data(node: GroupBy[Any] | Parallel[Any] | Subsample[Any], data: Dataset, reads: tuple[str, ...]) -> Dataset:
    """``data`` itself on one table; on several, the relation of :func:`shared_source` with the columns ``reads``."""
    if not isinstance(data.source, TablesSource):
        return data
    source = shared_source(node)
    assert source is not None  # validate_schema refused it before the charge
    return data.source.join(source, reads)


def _check_grouped_relations(plan: object) -> None:
    """Before the charge: the aggregates of every GroupBy read one relation through the same row steps (:func:`group_relation`)."""
    stack = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, GroupBy):
            group_relation(node)
            stack.append(node.plan)
        elif isinstance(node, Compose):
            stack.extend(node.children)
        elif isinstance(node, Parallel):
            stack.extend(child for _, child in node.parts)
        elif isinstance(node, (PureToApprox, PureToZCDP, ZCDPToApprox)):
            stack.append(node.child)
        elif isinstance(node, (GroupPrivacy, Subsample)):
            stack.append(node.plan)


def group_relation(node: GroupBy[Any]) -> tuple[From | None, RowSteps | None]:
    """The relation (``| From``) and row steps (``| Where``, a derived column) that a GroupBy's aggregates share.

    A GroupBy groups the rows its aggregates read: the relation joined from the
    tables, filtered by the aggregates' common ``Where`` and extended by their
    derived columns (the union; a row-wise value, so computing it before or after
    grouping is the same), once, before the rows are grouped, as SQL's ``WHERE``
    runs before ``GROUP BY``: a row the filter drops is in no group, and takes
    no part in choosing private keys or in a user's group bound. The GroupBy then
    groups the transformed rows, so its cost rule is unchanged: a row-wise
    filter or map sends the rows of one user (or one row) to at most as many
    rows of that user (stability 1; McSherry 2009, PINQ §3), and a join to the
    user's table sends one user's rows to that user's result rows only
    (:mod:`dpalg.data._tables`).

    Raises:
        Unsupported: the aggregates read different relations, filter the rows differently (the
            filter runs before the grouping), or derive one column name two ways.
    """
    source = shared_source(node)
    steps = [primitive_steps(child) for child in _primitives(node.plan)]
    owner = f"GroupBy(by={node.by!r})"
    wheres = {None if s is None else s.where for s in steps}
    if len(wheres) > 1:
        raise Unsupported(
            f"{owner}: its aggregates filter the rows differently (Where); the filter runs before the grouping, "
            "so give every aggregate the same Where (or use one GroupBy per filter)"
        )
    derive: dict[str, Expr] = {}
    for step in steps:
        for name, expr in () if step is None else step.derive:
            if derive.setdefault(name, expr) != expr:
                raise Unsupported(f"{owner}: two aggregates derive the column {name[:100]!r} differently; rename one")
    where = wheres.pop() if wheres else None
    if where is None and not derive:
        return source, None
    public = tuple(dict.fromkeys(name for step in steps if step is not None for name in step.public))
    keys = any(step is not None and step.keys for step in steps)
    return source, RowSteps(tuple(derive.items()), where, keys=keys, public=public)


def group_data(node: GroupBy[Any], data: Dataset, reads: tuple[str, ...]) -> tuple[Dataset, bool]:
    """The rows a GroupBy groups (its aggregates' relation and row steps applied), and whether steps were applied.

    ``reads``: the columns the GroupBy and its aggregates read (the by-columns, the
    id, the aggregates' columns); the derived columns are added. Checked before
    the charge by :func:`validate_schema`; never raises on a value.
    """
    source, steps = group_relation(node)
    data = relation_data(node, data, reads)
    if steps is None:
        return data, source is not None
    return apply_steps(data, steps, reads), True


def _primitives(plan: object) -> Iterator[AbstractPrimitive[Any]]:
    """Every primitive node of the plan, in the order :func:`plan_columns` visits them."""
    if isinstance(plan, Compose):
        for child in plan.children:
            yield from _primitives(child)
    elif isinstance(plan, Parallel):
        for _, child in plan.parts:
            yield from _primitives(child)
    elif isinstance(plan, (PureToApprox, PureToZCDP, ZCDPToApprox)):
        yield from _primitives(plan.child)
    elif isinstance(plan, (GroupPrivacy, GroupBy, Subsample)):
        yield from _primitives(plan.plan)
    elif isinstance(plan, AbstractPrimitive):
        yield plan


def read_columns(plan: object) -> tuple[str, ...]:
    """The names of the columns the plan reads (:func:`plan_columns`), sorted, each once: a function of the plan alone."""
    return tuple(sorted({use.name for _, use in plan_columns(plan)}))


def plan_schema(plan: object, data: Dataset) -> tuple[tuple[str, str], ...]:
    """The public schema of the columns the plan reads: ``(column, type)`` pairs sorted by column name.

    The type is the row of the schema table the column's declared type falls in
    (:func:`dpalg.data._schema.column_kind`), the same classification the schema
    check and the releases read. Reads names and dtypes only; called after
    :func:`validate_schema` and before the charge, and recorded in the certificate.

    Examples:
        >>> from dpalg import Clip, Query
        >>> from dpalg.mechanisms import Laplace
        >>> from dpalg.data import as_dataset
        >>> plan_schema(Laplace(Query.sum("x") | Clip(0, 1), epsilon=1), as_dataset({"x": [1], "y": ["a"]}))
        (('x', 'int'),)
    """
    return tuple((name, column_kind(data, name)) for name in read_columns(plan))


def schema_choices(derivation: Derivation, kinds: Mapping[str, str]) -> tuple[tuple[str, SchemaChoice], ...]:
    """``(path, choice)`` for every primitive whose release chooses from the schema, in derivation pre-order.

    ``path`` is the primitive's derivation path; ``kinds`` maps every column the
    plan reads to its type (:func:`plan_schema`). A path is listed once (a tight
    rule wraps the root under the root's own path).
    """
    out: dict[str, SchemaChoice] = {}
    for d in derivation.walk():
        if isinstance(d.source, AbstractPrimitive) and d.path not in out:
            choice = d.source.schema_choice(kinds)
            if choice is not None:
                out[d.path] = choice
    return tuple(out.items())
