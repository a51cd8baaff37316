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
    (
        "pieces: data, networks, environments, outputs",
        {
            "quiet", "transition", "normalization", "networks", "noise", "replay",
            "timing", "checkpoint", "population", "presets", "cluster", "trackers", "video",
            "plot", "logger", "outputs", "envs", "envs.observation", "envs.brax",
            "envs.dm_control", "envs.gymnasium", "envs.probes", "envs.playground",
            "envs.point_mass", "envs.repeat", "algos.common", "algos.sale", "algos.critics",
            "algos.critics.base", "algos.critics.scalar", "algos.critics.categorical",
            "algos.critics.crossq",
            "algos.critics.quantile", "algos.targets",
            "algos.exploration",
        },
    ),
    ("learners", {"algos", "algos.td3", "algos.sac", "algos.mpo"}),
    ("loops", {"loops", "loops.common", "loops.nstep", "loops.host", "loops.device"}),
    ("flags", {"cli", "resuming"}),
    ("trainers", {"trainers", "subpopulations", "play"}),
    ("driver", {"driver", "saved"}),
    (
        "entry points, tools and the Python door (jax_rl.train)",
        {
            "jax_rl", "api", "main_dm_control", "main_gym", "main_brax", "evaluate", "render",
            "results", "benchmark", "bench_peers", "gpu_check", "chaos", "soak",
        },
    ),
]  # fmt: skip


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


def test_every_module_has_a_floor():
    floored = set().union(*(members for _, members in FLOORS))
    assert set(module_names()) == floored


def test_no_module_imports_from_a_floor_above():
    floor_of = {m: i for i, (_, members) in enumerate(FLOORS) for m in members}
    upward = [
        f"{module} ({FLOORS[floor_of[module]][0]}) imports {target} ({FLOORS[floor_of[target]][0]})"
        for module, targets in graph().items()
        for target in targets
        if floor_of[target] > floor_of[module]
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
