"""A search space file for `python -m jax_rl.tools.tune`: read, checked, turned into flags.

    [study]            what is tuned and how (every key below `STUDY_KEYS`)
    policy = "TD3"
    env = "dm_control/cartpole-swingup"
    max_timesteps = 50000              the length of every trial
    eval_freq = 10000                  its evaluations: the pruner's steps
    rounds = 4
    trials_per_round = 4               K trials, trained as one vmapped population
    pruner = "median"

    [fixed]            flags every trial takes, by the flag's name
    hidden_sizes = [64, 64]

    [space.actor_lr]   one searched flag: a range ...
    low = 1e-4
    high = 1e-2
    log = true

    [space.n_step]     ... or choices
    choices = [1, 3]

A flag is *traced* when its values can differ between the agents of one population (the
learners' continuous hyperparameters: the flags that take comma-separated values, a
sweep); every other flag (widths, counts, the loop's settings) is *static*. Trials that
differ in a static flag cannot share a program: the tuner trains each distinct static
setting of a round as a population of its own (`tune.plan_round`).

`load` checks the whole file before anything is written: every name against the entry
point's parser, every range, and every bound and choice resolved as a run would resolve
it (`driver.resolve_settings`: the learner's own checks, the preset, the task). A bad
file is one line and exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import math
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jax_rl.run import cli
from jax_rl.run.cli import fail

STUDY_KEYS = {
    "name": "the study's name (default: the space file's name without .toml)",
    "policy": "the learner: TD3, SAC or MPO",
    "env": "the task, as jax_rl.train names it: dm_control/<domain>-<task>, gymnasium/<Env>, ...",
    "preset": "the preset the trials start from (default auto, as a run; paper: none)",
    "max_timesteps": "environment steps of every trial",
    "eval_freq": "environment steps between evaluations (the steps the pruner sees)",
    "direction": "maximize (default) or minimize the final evaluation return",
    "rounds": "rounds of trials",
    "trials_per_round": "trials asked of Optuna per round and trained as one population",
    "seeds": "seeds per trial (default 1): a trial's value is the mean over them",
    "seed": "the first training seed (default 0) and the sampler's seed",
    "sampler": "tpe (default) or random",
    "pruner": "median (default), percentile or none",
    "report_every": "evaluations between pruning decisions (default 1): the training chunks",
}
PRUNER_KEYS = {
    "startup_trials": "no pruning until this many trials have completed (default: one round)",
    "warmup_steps": "no pruning before this environment step (default 0)",
    "percentile": "the percentile pruner's percentile (default 25)",
}
SAMPLERS = ("tpe", "random")
PRUNERS = ("median", "percentile", "none")
DIRECTIONS = ("maximize", "minimize")
RANGE_KEYS = ("low", "high", "log", "step")

# Flags the study itself sets: the task, the length and evaluations that chunks are made of.
SET_BY_STUDY = {
    "domain_name": "env",
    "task_name": "env",
    "env": "env",
    "max_timesteps": "max_timesteps",
    "eval_freq": "eval_freq",
    "preset": "preset",
    "seed": "seed",
    "num_seeds": "seeds",
}
# Flags that say where and how a run goes, not how it learns (besides `SET_BY_STUDY`).
NOT_TUNABLE = frozenset(
    {"resume", "save_dir", "no_progress", "help", "logger", "video_every", "engine", "address",
     "agents_per_worker", "policy"}
)  # fmt: skip
# Fixed flags that are the measurement rather than the recipe: never searched, and left
# out of the preset entry the best trial is printed as.
MEASUREMENT = frozenset({"eval_episodes", "log_freq", "checkpoint_every", "no_checkpoint_replay"})


@dataclasses.dataclass(frozen=True)
class Param:
    """One searched flag: its Optuna distribution and whether a population can vary it."""

    name: str
    kind: str  # "float", "int", "bool", "sizes", "text": how the flag parses
    traced: bool  # agents of one population may take different values
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] | None = None  # as the file gives them (sizes: lists)

    def distribution(self) -> Any:
        """Its Optuna distribution (choices of sizes as their comma-separated text)."""
        from optuna import distributions

        if self.choices is not None:
            return distributions.CategoricalDistribution([_stored(c) for c in self.choices])
        assert self.low is not None and self.high is not None
        if self.kind == "int":
            step = int(self.step) if self.step is not None else 1
            return distributions.IntDistribution(int(self.low), int(self.high), self.log, step)
        return distributions.FloatDistribution(self.low, self.high, log=self.log, step=self.step)

    def value(self, stored: Any) -> Any:
        """A value as Optuna stores it -> as a flag (and a preset) takes it."""
        if self.kind == "sizes":
            return [int(part) for part in str(stored).split(",")]
        return stored

    def extremes(self) -> list[Any]:
        """The values that `load` resolves as a run would: both bounds, or every choice."""
        return list(self.choices) if self.choices is not None else [self.low, self.high]


def _stored(choice: Any) -> Any:
    return ",".join(map(str, choice)) if isinstance(choice, list) else choice


@dataclasses.dataclass(frozen=True)
class Space:
    """A checked search space: the study's settings, the fixed flags, the searched ones."""

    path: Path
    study: dict[str, Any]  # every STUDY_KEYS entry, defaults filled in
    pruner: dict[str, Any]  # every PRUNER_KEYS entry, defaults filled in
    fixed: dict[str, Any]
    params: tuple[Param, ...]
    entry: tuple[str, str]  # the entry point: (module, Backend class)
    task_argv: tuple[str, ...]  # the flags that name the task
    switches: frozenset[str]  # store_true flags (present or absent)
    preset_applied: dict[str, Any] = dataclasses.field(default_factory=dict)
    """what the study's preset sets that the fixed flags do not"""
    preset_name: str | None = None
    task: str = ""  # "<backend kind>/<task>", as presets name it

    @property
    def traced(self) -> list[Param]:
        return [p for p in self.params if p.traced]

    @property
    def static(self) -> list[Param]:
        return [p for p in self.params if not p.traced]

    def record(self) -> dict[str, Any]:
        """What the study stores to recognise its space on resume (rounds may grow)."""
        study = {k: v for k, v in self.study.items() if k != "rounds"}
        params = [dataclasses.asdict(p) for p in self.params]
        return _plain({"study": study, "pruner": self.pruner, "fixed": self.fixed,
                       "space": params})  # fmt: skip

    def chunk_ends(self, start_timesteps: int) -> list[int]:
        """The steps a population of this study trains to, one chunk after another, with
        pruning decisions between them: every `report_every` evaluations from the end of
        the warm-up (a run refuses to stop before it), and the end."""
        every = self.study["eval_freq"] * self.study["report_every"]
        total = self.study["max_timesteps"]
        ends = [end for end in range(every, total, every) if end >= start_timesteps]
        return [*ends, total]

    def argv(self, values: dict[str, Any]) -> list[str]:
        """The entry point's flags for the fixed flags plus `values` (flag -> value)."""
        from jax_rl.api import flag_values

        study = self.study
        settings = {
            "max_timesteps": study["max_timesteps"],
            "eval_freq": study["eval_freq"],
            "seed": study["seed"],
            "preset": study["preset"],
            **self.fixed,
            **values,
        }
        head = ["--policy", study["policy"], *self.task_argv]
        return [*head, *flag_values(settings, set(self.switches))]


def _plain(value: Any) -> Any:
    """Tuples as lists, recursively: the record as JSON gives it back."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def traced_flags() -> frozenset[str]:
    """The learners' fields a population may vary (the flags a sweep takes)."""
    from jax_rl import algos
    from jax_rl.algos import common

    return frozenset(
        name
        for module in algos.ALGORITHMS.values()
        for name, default, _, static in common.describe(module.Config)
        if isinstance(default, float) and not isinstance(default, bool) and not static
    )


def learner_defaults() -> dict[str, Any]:
    """Every learner field's default, by flag name (the first learner that has it)."""
    from jax_rl import algos
    from jax_rl.algos import common

    defaults: dict[str, Any] = {}
    for module in algos.ALGORITHMS.values():
        for name, default, *_ in common.describe(module.Config):
            defaults.setdefault(name, default)
    return defaults


def flag_kind(action: argparse.Action, defaults: dict[str, Any]) -> str:
    """How a flag parses: float, int, bool, sizes (comma-separated integers) or text."""
    default = defaults.get(action.dest, action.default)
    if isinstance(default, bool) or action.type is cli.parse_bool:
        return "bool"
    if isinstance(default, tuple):
        return "sizes"
    if isinstance(default, float) or action.type is cli.finite_float:
        return "float"
    if isinstance(default, int) or action.type is int:
        return "int"
    return "text"


def apply_overrides(tables: dict[str, Any], overrides: Sequence[str]) -> None:
    """`--set study.rounds=2` (a TOML value; bare text is a string) into the file's tables."""
    for item in overrides:
        key, equals, text = item.partition("=")
        path = key.strip().split(".")
        if not equals or len(path) < 2 or not all(path):
            fail(f"--set {item}: expected TABLE.KEY=VALUE, e.g. study.rounds=2")
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = text
        node = tables
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                fail(f"--set {item}: {part} is not a table")
        node[path[-1]] = value


def load(path: Path, overrides: Sequence[str] = ()) -> Space:
    """Read and check the space file (one line and exit 2 on the first problem)."""
    try:
        tables = tomllib.loads(path.read_text())
    except OSError as e:
        fail(f"{path}: cannot read it ({e.strerror or e})")
    except tomllib.TOMLDecodeError as e:
        fail(f"{path}: not valid TOML ({e})")
    apply_overrides(tables, overrides)
    where = path.name
    unknown = set(tables) - {"study", "pruner", "fixed", "space"}
    if unknown:
        fail(f"{where}: unknown table [{sorted(unknown)[0]}]; the tables are [study], "
             "[pruner], [fixed] and [space.FLAG]")  # fmt: skip
    study = _study(tables.get("study", {}), path)
    pruner = _pruner(tables.get("pruner", {}), study, where)
    kind, task_argv = _task(study["env"], where)
    from jax_rl.run.saved import ENTRY_POINTS

    module_name, backend_name = ENTRY_POINTS[kind]
    module = importlib.import_module(module_name)
    parser = module.build_parser()
    actions = {a.dest: a for a in parser._actions if a.option_strings}
    script = f"jax_rl/{module_name.rsplit('.', 1)[-1]}.py"
    fixed = _fixed(tables.get("fixed", {}), actions, script, study["policy"], where)
    params = _params(tables.get("space", {}), actions, fixed, script, study["policy"], where)
    switches = frozenset(name for name, a in actions.items() if a.nargs == 0)
    space = Space(
        path, study, pruner, fixed, tuple(params), (module_name, backend_name),
        tuple(task_argv), switches,
    )  # fmt: skip
    settings, backend = _resolve_all(space, where)
    applied = {k: v for k, v in settings.preset_applied.items() if k not in fixed}
    return dataclasses.replace(
        space,
        preset_applied=applied,
        preset_name=settings.preset.name if settings.preset is not None else None,
        task=f"{backend.kind}/{settings.task}",
    )


def _study(table: Any, path: Path) -> dict[str, Any]:
    where = f"{path.name} [study]"
    if not isinstance(table, dict):
        fail(f"{where}: expected a table")
    unknown = sorted(set(table) - set(STUDY_KEYS))
    if unknown:
        fail(f"{where}: unknown key {unknown[0]!r} (flags go under [fixed] or [space.FLAG]); "
             f"the keys: {', '.join(STUDY_KEYS)}")  # fmt: skip
    for key in ("policy", "env", "max_timesteps", "eval_freq", "rounds", "trials_per_round"):
        if key not in table:
            fail(f"{where}: {key} is missing ({STUDY_KEYS[key]})")
    study = {
        "name": path.stem, "preset": "auto", "direction": "maximize", "seeds": 1, "seed": 0,
        "sampler": "tpe", "pruner": "median", "report_every": 1, **table,
    }  # fmt: skip
    for key in ("name", "policy", "env", "preset", "direction", "sampler", "pruner"):
        if not isinstance(study[key], str) or not study[key]:
            fail(f"{where}: {key} must be a non-empty string, got {study[key]!r}")
    for key in ("max_timesteps", "eval_freq", "rounds", "trials_per_round", "seeds",
                "report_every"):  # fmt: skip
        if not _is_int(study[key]) or study[key] < 1:
            fail(f"{where}: {key} must be a positive integer, got {study[key]!r}")
    if not _is_int(study["seed"]) or study["seed"] < 0:
        fail(f"{where}: seed must be an integer >= 0, got {study['seed']!r}")
    for key, allowed in (("direction", DIRECTIONS), ("sampler", SAMPLERS), ("pruner", PRUNERS)):
        if study[key] not in allowed:
            fail(f"{where}: {key} must be one of {', '.join(allowed)}, got {study[key]!r}")
    if study["eval_freq"] > study["max_timesteps"]:
        fail(f"{where}: eval_freq ({study['eval_freq']}) exceeds max_timesteps "
             f"({study['max_timesteps']}): the pruner would see no evaluation")  # fmt: skip
    return study


def _pruner(table: Any, study: dict[str, Any], where: str) -> dict[str, Any]:
    where = f"{where} [pruner]"
    if not isinstance(table, dict):
        fail(f"{where}: expected a table")
    unknown = sorted(set(table) - set(PRUNER_KEYS))
    if unknown:
        fail(f"{where}: unknown key {unknown[0]!r}; the keys: {', '.join(PRUNER_KEYS)}")
    pruner = {"startup_trials": study["trials_per_round"], "warmup_steps": 0, "percentile": 25.0,
              **table}  # fmt: skip
    for key in ("startup_trials", "warmup_steps"):
        if not _is_int(pruner[key]) or pruner[key] < 0:
            fail(f"{where}: {key} must be an integer >= 0, got {pruner[key]!r}")
    percentile = pruner["percentile"]
    if not _is_number(percentile) or not 0 < percentile < 100:
        fail(f"{where}: percentile must be a number in (0, 100), got {percentile!r}")
    pruner["percentile"] = float(percentile)
    return pruner


def _task(env: str, where: str) -> tuple[str, list[str]]:
    from jax_rl.api import task_flags

    try:
        return task_flags(env)
    except ValueError as e:
        fail(f"{where} [study]: {e}")


def _check_flag(
    name: str, actions: dict[str, argparse.Action], script: str, policy: str, where: str
) -> argparse.Action:
    """The parser's action of flag `name`, or one line and exit 2."""
    if name in SET_BY_STUDY:
        fail(f"{where}: {name} is set by the study ([study] {SET_BY_STUDY[name]})")
    if name in NOT_TUNABLE or name not in actions:
        fail(f"{where}: --{name} is not a training flag of {script} (python {script} "
             f"--policy {policy} --help lists them)")  # fmt: skip
    return actions[name]


def _fixed(
    table: Any, actions: dict[str, argparse.Action], script: str, policy: str, where: str
) -> dict[str, Any]:
    if not isinstance(table, dict):
        fail(f"{where} [fixed]: expected a table of flag = value")
    for name, value in table.items():
        action = _check_flag(name, actions, script, policy, f"{where} [fixed] {name}")
        if action.nargs == 0 and not isinstance(value, bool):
            fail(f"{where} [fixed] {name}: a switch takes true or false, got {value!r}")
        if isinstance(value, dict):
            fail(f"{where} [fixed] {name}: expected a value, got a table")
    return dict(table)


def _params(
    table: Any,
    actions: dict[str, argparse.Action],
    fixed: dict[str, Any],
    script: str,
    policy: str,
    where: str,
) -> list[Param]:
    if not isinstance(table, dict) or not table:
        fail(f"{where}: no [space.FLAG] table: nothing to search")
    traced, defaults = traced_flags(), learner_defaults()
    params = []
    for name, entry in table.items():
        at = f"{where} [space.{name}]"
        action = _check_flag(name, actions, script, policy, at)
        if name in MEASUREMENT or action.nargs == 0:
            fail(f"{at}: {name} is part of the measurement, not the recipe; set it in [fixed]")
        if name in fixed:
            fail(f"{at}: {name} is also in [fixed]; give it in one place")
        if not isinstance(entry, dict):
            fail(f"{at}: expected a table with low and high, or choices")
        kind = flag_kind(action, defaults)
        params.append(_param(name, kind, name in traced, entry, at))
    return params


def _param(name: str, kind: str, traced: bool, entry: dict[str, Any], at: str) -> Param:
    """One [space.FLAG] table as a Param (its keys and range checked)."""
    unknown = sorted(set(entry) - {*RANGE_KEYS, "choices"})
    if unknown:
        fail(f"{at}: unknown key {unknown[0]!r}; give low, high (log, step) or choices")
    if "choices" in entry:
        if set(entry) & set(RANGE_KEYS):
            fail(f"{at}: give either choices or a range (low, high), not both")
        choices = entry["choices"]
        if not isinstance(choices, list) or not choices:
            fail(f"{at}: choices must be a non-empty list")
        stored = [_stored(c) for c in choices]
        if len(set(map(repr, stored))) != len(stored):
            fail(f"{at}: choices {choices} repeat a value")
        return Param(name, kind, traced, choices=tuple(choices))
    if "low" not in entry or "high" not in entry:
        fail(f"{at}: give low and high (a range) or choices")
    if kind not in ("float", "int"):
        takes = {"bool": "true or false", "sizes": "sizes", "text": "names"}[kind]
        fail(f"{at}: --{name} takes {takes}: give choices, not a range")
    low, high, log, step = entry["low"], entry["high"], entry.get("log", False), entry.get("step")
    number = _is_int if kind == "int" else _is_number
    for key, value in (("low", low), ("high", high), ("step", step)):
        if value is not None and not number(value):
            expected = "an integer" if kind == "int" else "a number"
            fail(f"{at}: {key} must be {expected} (--{name} takes {kind}s), got {value!r}")
    if not isinstance(log, bool):
        fail(f"{at}: log must be true or false, got {log!r}")
    if not low < high:
        fail(f"{at}: empty range: low ({low}) must be below high ({high}); a single value "
             "goes under [fixed]")  # fmt: skip
    if log and low <= 0:
        fail(f"{at}: log = true needs low > 0, got low = {low}")
    if log and step is not None:
        fail(f"{at}: log = true and step cannot go together")
    if step is not None and not step > 0:
        fail(f"{at}: step must be > 0, got {step}")
    cast = int if kind == "int" else float
    return Param(
        name, kind, traced, cast(low), cast(high), log, None if step is None else cast(step)
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def resolve(space: Space, values: dict[str, Any]) -> tuple[Any, Any]:
    """`driver.resolve_settings` of the flags `space.argv(values)` (its stderr kept off the
    screen), and the backend it resolved them with; a bad setting raises cli.UsageError."""
    from jax_rl.run import driver

    module = importlib.import_module(space.entry[0])
    backend = getattr(module, space.entry[1])()
    with contextlib.redirect_stderr(io.StringIO()):
        settings = driver.resolve_settings(module.build_parser(), backend, space.argv(values))
    return settings, backend


def _resolve_all(space: Space, where: str) -> tuple[Any, Any]:
    """Resolve the fixed flags alone, then with each bound and each choice of every searched
    flag (the others at their defaults): the run's own checks of every value the space
    holds. Returns the fixed flags' settings and backend."""

    def attempt(values: dict[str, Any], what: str) -> tuple[Any, Any]:
        try:
            return resolve(space, values)
        except cli.UsageError as e:
            fail(f"{where} {what}: {e.message}")

    resolved = attempt({}, "[study] and [fixed]")
    for param in space.params:
        for value in param.extremes():
            attempt({param.name: value}, f"[space.{param.name}] value {value!r}")
    return resolved
