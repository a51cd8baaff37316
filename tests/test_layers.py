"""The import graph of jax_rl: no circle, and no module reaching up a floor.

Every `import jax_rl...` and `from jax_rl... import ...` counts, at module level or
inside a function (a late import is still a dependency). A module may import modules
of its own floor or of a floor below; the floors run from the pieces every run is made
of up to the commands a user types (flags -> settings -> trainer -> loop -> outputs,
read top-down).
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "jax_rl"

FLOORS: list[tuple[str, set[str]]] = [
    ("data: transitions, replay, noise, populations, random state", {"core"}),
    (
        "pieces: networks, environments, outputs",
        {
            "networks", "envs", "io", "algos.common", "algos.sale", "algos.mrq",
            "algos.critics",
            "algos.targets", "algos.exploration", "run.presets", "run.cluster",
        },
    ),
    ("learners", {"algos", "algos.td3", "algos.sac", "algos.mpo"}),
    ("loops", {"loops"}),
    ("flags", {"run", "run.cli", "run.resuming"}),
    ("trainers", {"run.trainers", "run.subpopulations", "run.play"}),
    ("driver", {"run.driver", "run.saved"}),
    (
        "entry points, tools and the Python door (jax_rl.train)",
        {"jax_rl", "api", "main_dm_control", "main_gym", "main_brax", "tools", "watch"},
    ),
]  # fmt: skip
"""A name is a module or a folder: a folder's modules sit on its floor unless a longer name
places them on another (`algos.td3` is a learner, `algos.common` a piece)."""


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        names[name.removeprefix("jax_rl.")] = path
    return names


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The jax_rl modules `path` imports (`from jax_rl import cli` names the module cli)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package
                base = ("jax_rl." + package).split(".")[: len(package.split(".")) + 2 - node.level]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            targets = [f"{module}.{alias.name}" for alias in node.names] + [module]
        else:
            continue
        modules = {t for t in targets if t.removeprefix("jax_rl.") in known or t == "jax_rl"}
        # `from jax_rl.x import y` names jax_rl.x.y and jax_rl.x: the deepest is the module
        deepest = {t for t in modules if not any(o.startswith(t + ".") for o in modules)}
        found |= {t.removeprefix("jax_rl.") for t in deepest}
    found.discard(name)
    return found


def graph() -> dict[str, set[str]]:
    names = module_names()
    return {name: imports_of(path, name, set(names)) for name, path in names.items()}


def floor_of(module: str) -> int:
    """The floor of the longest name in FLOORS that is `module` or a folder above it."""
    named = [
        (len(name), i)
        for i, (_, members) in enumerate(FLOORS)
        for name in members
        if module == name or module.startswith(name + ".")
    ]
    if not named:
        raise KeyError(module)
    return max(named)[1]


def test_every_module_has_a_floor_and_every_name_a_module():
    modules = set(module_names())
    unplaced = sorted(
        m
        for m in modules
        if not any(m == n or m.startswith(n + ".") for _, members in FLOORS for n in members)
    )
    assert not unplaced, f"modules with no floor: {unplaced}"
    names = set().union(*(members for _, members in FLOORS))
    stale = sorted(n for n in names if not any(m == n or m.startswith(n + ".") for m in modules))
    assert not stale, f"floors name what no longer exists: {stale}"


def test_the_package_top_holds_only_folders_and_the_entry_points():
    """A listing of jax_rl/ reads as the floors: the entry points and the Python door at the
    top, every other module in the folder of its room."""
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert top == ["__init__", "api", "main_brax", "main_dm_control", "main_gym", "networks"]


def test_no_module_imports_from_a_floor_above():
    upward = [
        f"{module} ({FLOORS[floor_of(module)][0]}) imports {target} ({FLOORS[floor_of(target)][0]})"
        for module, targets in graph().items()
        for target in targets
        if floor_of(target) > floor_of(module)
    ]
    assert not upward, "\n".join(upward)


def test_the_imports_have_no_circle():
    edges = graph()
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            raise AssertionError("import circle: " + " -> ".join([*path, module]))
        if module in done:
            return
        for target in sorted(edges[module]):
            visit(target, [*path, module])
        done.add(module)

    for module in sorted(edges):
        visit(module, [])
