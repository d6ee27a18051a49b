"""Package-level contracts: docstrings, layering, the data adapter, query validation."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from collections.abc import Callable
from pathlib import Path

import attrs

import numpy as np
import pytest

import dpalg
from dpalg import Clip, InvalidArgument, Query
from dpalg.data import as_dataset

ROOT = Path(dpalg.__file__).resolve().parent


def _public_modules() -> list[str]:
    names = ["dpalg"]
    for info in pkgutil.walk_packages([str(ROOT)], prefix="dpalg."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return names


def test_every_public_symbol_has_a_docstring() -> None:
    missing: list[str] = []
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and not (obj.__doc__ or "").strip():
                missing.append(f"{module_name}.{name}")
    assert not missing, missing


# ---------------------------------------------------------------------------------------------
# The house: floors and rooms (docs/architecture.md). Each module lives on one floor; an import
# may stay on its floor or go down, never up, and no set of modules may import each other in a
# circle. The floor order is written here once:
FLOORS: tuple[tuple[str, ...], ...] = (
    ("_errors",),
    ("_bottom",),
    ("_numbers",),
    ("measures",),
    ("data",),
    ("queries",),
    ("sensitivity",),
    ("noise",),
    ("graph",),
    ("mechanisms",),
    ("release",),
    ("cli", "_demo", "_commands", ""),  # "": the package itself (dpalg/__init__.py, the public names)
)
# Inside mechanisms/, each framework is a room (a sub-package); a room imports lower floors, the
# shared room and itself, never another room.
ROOMS_OF = "dpalg.mechanisms"
SHARED_ROOM = "dpalg.mechanisms._common"
# What counts as an arrow a -> b: every `import` and `from ... import` in a's file that names a
# module of the package -- at module level, inside functions, and under
# `if TYPE_CHECKING:` -- resolved to the module it loads (`from dpalg.data import x` is
# dpalg.data.x when that is a module, else dpalg.data). Every arrow counts, for the circle
# search and for the floor rule alike: an arrow under TYPE_CHECKING does not run, but a
# reader (or a tool) that draws the imports still sees it, and a type a lower module names
# belongs below it (the slots of graph/_provided.py invert the calls that go up). Importing
# a module also runs its parent packages' __init__; that implicit arrow is not counted (a
# package's __init__ re-exports its own modules by design).


@attrs.frozen
class Arrow:
    source: str
    target: str
    line: int
    kind: str  # "module" (runs at import), "local" (inside a function) or "type" (under TYPE_CHECKING)

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} (line {self.line}, {self.kind})"


def _module_names(root: Path, package: str) -> dict[str, Path]:
    names: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        names[".".join((package, *rel.parts)).removesuffix(".__init__")] = path
    return names


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """The ids of the nodes inside the *body* of an ``if TYPE_CHECKING:`` (its ``else`` runs)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                found.update(id(n) for n in ast.walk(stmt))
    return found


def import_arrows(root: Path, package: str) -> list[Arrow]:
    """Every arrow between the modules of ``package`` (whose files are under ``root``)."""
    modules = _module_names(root, package)

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    arrows: list[Arrow] = []
    for source, path in modules.items():
        tree = ast.parse(path.read_text())
        typed = _type_checking_nodes(tree)
        in_function = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f)}
        here = source if path.name == "__init__.py" else source.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            else:
                continue
            kind = "type" if id(node) in typed else "local" if id(node) in in_function else "module"
            for target in targets:
                found = owner(target) if target.split(".")[0] == package else None
                if found is not None and found != source:
                    arrows.append(Arrow(source, found, node.lineno, kind))
    return arrows


def import_circles(arrows: list[Arrow]) -> list[list[str]]:
    """The import circles: strongly connected components of more than one module (Tarjan), sorted."""
    graph: dict[str, set[str]] = {}
    for arrow in arrows:
        graph.setdefault(arrow.source, set()).add(arrow.target)
        graph.setdefault(arrow.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]  # iterative: no recursion limit on a long chain
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(circles)


def floor_of(module: str) -> int:
    """The floor of a module of dpalg (its index in FLOORS)."""
    top = module.split(".")[1] if "." in module else ""
    for i, names in enumerate(FLOORS):
        if top in names:
            return i
    raise AssertionError(f"{module} is on no floor: add {top!r} to FLOORS in tests/foundation/test_package.py")


def upward_arrows(arrows: list[Arrow]) -> list[Arrow]:
    """The arrows that run up a floor, whatever their kind (no exceptions)."""
    return [a for a in arrows if floor_of(a.target) > floor_of(a.source)]


def room_of(module: str) -> str | None:
    """The mechanisms sub-package (room) a module belongs to, or None (another floor, or a flat module of mechanisms)."""
    if not module.startswith(ROOMS_OF + "."):
        return None
    room = ".".join(module.split(".")[:3])
    return room if (ROOT / room.split(".", 1)[1].replace(".", "/")).is_dir() or room == SHARED_ROOM else None


def room_trespasses(arrows: list[Arrow], room: Callable[[str], str | None] = room_of) -> list[Arrow]:
    """Arrows from one framework room of mechanisms/ into another (the shared room is open to all)."""
    out = []
    for a in arrows:
        here, there = room(a.source), room(a.target)
        if here is not None and there is not None and here != there and there != SHARED_ROOM:
            out.append(a)
    return out


ARROWS = import_arrows(ROOT, "dpalg")


def _in_mechanisms(module: str) -> bool:
    return module == ROOMS_OF or module.startswith(ROOMS_OF + ".")




def package_circles(arrows: list[Arrow], inside_mechanisms: bool) -> list[list[str]]:
    """The circles over ALL arrows (module-level, function-local and type-only), inside mechanisms/ or outside it."""
    return [c for c in import_circles(arrows) if all(_in_mechanisms(m) for m in c) == inside_mechanisms]


@pytest.mark.parametrize("scope", ["outside mechanisms", "mechanisms"])
def test_no_import_circle(scope: str) -> None:
    circles = package_circles(ARROWS, scope == "mechanisms")
    report = []
    for circle in circles:
        members = set(circle)
        report.append(" <-> ".join(circle) + ":\n    " + "\n    ".join(sorted({str(a) for a in ARROWS if a.source in members and a.target in members})))
    assert not circles, f"{len(circles)} import circle(s):\n" + "\n".join(report)


def test_no_import_runs_up_a_floor() -> None:
    up = upward_arrows(ARROWS)
    assert not up, "imports that run up a floor:\n" + "\n".join(f"{a}  [{FLOORS[floor_of(a.source)][0]} -> {FLOORS[floor_of(a.target)][0]}]" for a in up)


def test_no_framework_room_imports_another() -> None:
    trespasses = room_trespasses(ARROWS)
    assert not trespasses, "a framework of mechanisms/ imports another (only lower floors, _common and itself):\n" + "\n".join(map(str, trespasses))


def _plant(root: Path, files: dict[str, str]) -> list[Arrow]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return import_arrows(root, "pkg")


def test_the_detectors_catch_planted_faults(tmp_path: Path) -> None:
    """The checks above would pass vacuously if the arrow collector or the circle search lost arrows (type-only ones included)."""
    assert import_circles([Arrow("a", "b", 1, "module"), Arrow("b", "c", 1, "local"), Arrow("c", "a", 1, "module"), Arrow("d", "a", 1, "module")]) == [["a", "b", "c"]]
    assert import_circles([Arrow("a", "b", 1, "module"), Arrow("b", "c", 1, "module")]) == []
    arrows = _plant(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "low.py": "from __future__ import annotations\n\ndef f() -> None:\n    from pkg.high import g  # hidden in a function\n",
            "high.py": "from pkg import low\nfrom . import other\n",
            "other.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import g\nelse:\n    from pkg.sub.leaf import h\n",
            "sub/__init__.py": "",
            "sub/leaf.py": "from ..low import f\n",
            # a circle made only by a type-only import: it never runs, but it is a circle all the same
            "value.py": "from pkg import maker\n",
            "maker.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.value import V\n",
        },
    )
    kinds = {(a.source, a.target): a.kind for a in arrows}
    assert kinds == {
        ("pkg.low", "pkg.high"): "local",
        ("pkg.high", "pkg.low"): "module",
        ("pkg.high", "pkg.other"): "module",
        ("pkg.other", "pkg.high"): "type",
        ("pkg.other", "pkg.sub.leaf"): "module",  # the else of `if TYPE_CHECKING` runs
        ("pkg.sub.leaf", "pkg.low"): "module",
        ("pkg.value", "pkg.maker"): "module",
        ("pkg.maker", "pkg.value"): "type",
    }
    # the search the package test runs counts every arrow: the type-only circle is caught
    assert package_circles(arrows, inside_mechanisms=False) == [
        ["pkg.high", "pkg.low", "pkg.other", "pkg.sub.leaf"], ["pkg.maker", "pkg.value"],
    ]  # fmt: skip
    # the floor rule sees a planted upward import, type-only ones too, with no exception (not even plan.run's result)
    up = upward_arrows([Arrow("dpalg.data._x", "dpalg.noise", 3, "local"), Arrow("dpalg.noise._y", "dpalg.graph._z", 4, "type"),
                        Arrow("dpalg.graph._node", "dpalg.release._release", 5, "type")])  # fmt: skip
    assert [(a.source, a.target) for a in up] == [
        ("dpalg.data._x", "dpalg.noise"), ("dpalg.noise._y", "dpalg.graph._z"), ("dpalg.graph._node", "dpalg.release._release"),
    ]  # fmt: skip
    # the room rule: ptr may import _common and itself, not smooth
    rooms = {"dpalg.mechanisms.ptr._node": "dpalg.mechanisms.ptr", "dpalg.mechanisms.ptr._x": "dpalg.mechanisms.ptr",
             "dpalg.mechanisms.smooth": "dpalg.mechanisms.smooth", SHARED_ROOM: SHARED_ROOM}  # fmt: skip
    planted = [Arrow("dpalg.mechanisms.ptr._node", t, 1, "module") for t in ("dpalg.mechanisms.ptr._x", SHARED_ROOM, "dpalg.mechanisms.smooth", "dpalg.noise")]
    assert [a.target for a in room_trespasses(planted, rooms.get)] == ["dpalg.mechanisms.smooth"]


def test_dataset_adapter_and_policy() -> None:
    ds = as_dataset({"x": [1.0, np.nan, 3.0, np.inf], "y": [1, 2, 3, 4]})
    assert ds.n_rows == 4
    q = Query.sum("x") | Clip(0, 10)
    assert q.values(ds).tolist() == [1.0, 3.0, 10.0]  # NaN dropped, inf clipped
    with pytest.raises(InvalidArgument, match="same length"):
        as_dataset({"x": [1.0], "y": [1.0, 2.0]})
    with pytest.raises(InvalidArgument, match="1-D"):
        as_dataset({"x": [[1.0]]})
    with pytest.raises(InvalidArgument) as info:
        as_dataset({"x": [1.0]}).column("secret_col")
    assert "1.0" not in str(info.value)
    obj = as_dataset({"x": np.array([1.5, None, 2.5], dtype=object)})
    assert (Query.count("x")).evaluate(obj) == 2.0


def test_pandas_adapter() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0], "g": ["a", "b", "a"]})
    assert (Query.mean("x") | Clip(0, 10)).evaluate(as_dataset(frame)) == 2.0


def test_clip_far_outside_float_range_stays_inside() -> None:
    q = Query.sum("x") | Clip("0.1", "0.3")
    vals = q.values(as_dataset({"x": [-5.0, 0.2, 7.0]}))
    from fractions import Fraction

    assert all(Fraction("0.1") <= Fraction(v) <= Fraction("0.3") for v in vals.tolist())


@pytest.mark.parametrize(
    ("build", "owner", "field"),
    [
        (lambda: Clip(3, 1), "Clip", "lower"),
        (lambda: Clip(float("nan"), 1), "Clip", "lower"),
        (lambda: Clip(0, "x"), "Clip", "upper"),
        (lambda: Query.quantile("x", "1.5"), "Query", "q"),
        (lambda: Query.quantile("x", -1), "Query", "q"),
        (lambda: Query.trimmed_mean("x", "0.5"), "Query", "trim"),
        (lambda: Query.mean(""), "Query", "column"),
        (lambda: Query.histogram("x", keys=["a", "a"]), "Query", "keys"),
        (lambda: Query.histogram("x", keys=[1.5]), "Query", "keys"),  # type: ignore[list-item]
        (lambda: Query.user_sum("x", user=""), "Query", "user"),
        (lambda: Query("nonsense", "x"), "Query", "kind"),  # type: ignore[arg-type]
        (lambda: Query.count() | Clip(0, 1), "Query", "clip"),
    ],
)
def test_invalid_query_arguments(build: object, owner: str, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        build()  # type: ignore[operator]
    assert info.value.owner == owner and info.value.field == field


def test_query_repr_reproduces() -> None:
    for q in [
        Query.mean("age") | Clip(0, 100),
        Query.quantile("x", "0.9") | Clip("-1/2", 3),
        Query.histogram("g", keys=("a", "b")),
        Query.user_sum("pages", user="uid"),
        Query.count(),
    ]:
        assert eval(repr(q), {"Query": Query, "Clip": Clip}) == q  # noqa: S307


def test_query_evaluate_takes_what_run_takes() -> None:
    """``query.evaluate`` reads a plain dict and a DataFrame, as ``plan.run`` does (docs/user_level.md uses a dict)."""
    pd = pytest.importorskip("pandas")
    raw = {"uid": ["a", "a", "b"], "x": [3.0, 4.0, 50.0]}
    from dpalg import ClipPerUser

    q = Query.sum("x", user="uid") | ClipPerUser(0, 10)
    assert q.evaluate(raw) == q.evaluate(as_dataset(raw)) == q.evaluate(pd.DataFrame(raw)) == 17.0
    assert Query.histogram("uid").evaluate(raw) == {"a": 2.0, "b": 1.0}
