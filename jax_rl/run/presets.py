"""Presets: per-task settings that do better than a learner's published defaults.

One TOML file per learner, `jax_rl/presets/<policy>.toml`. Each table is one
preset: its keys are flag names (`n_step`, `epsilon_std`, `hidden_sizes`, ...)
with values as the flag would take them, plus `evidence`, the results folder
(and figures) that measured it. Tables are named

    [task."dm_control/*"]                  every task of a backend: the defaults there
    [named.NAME]                           chosen by name only (--preset NAME)
    [named."NAME/playground/HumanoidWalk"] --preset NAME on that task
    [named."NAME/playground/*"]            --preset NAME on that backend's other tasks

The defaults hold no task entry: one `*` entry per backend is what `--preset auto`
runs on every task of it (issue 97). Settings chosen on one task live in the opt-in
`--preset tuned` (`[named."tuned/dm_control/cartpole-swingup"]`); on a task it has no
entry for, `tuned` runs the backend's `*` entry and the start-up line says so.

A preset may say `device = "gpu"`: it is sized for an accelerator, and the
start-up line says so when it runs on a CPU. `base = "NAME"` starts a preset from the
named preset NAME's settings (its own keys win), so a recipe that several entries take
is written once; NAME may have a base of its own (a chain, without cycles). A backend's
`*` entry says `tuned_on = ["TASK", ...]`: the tasks its settings were chosen on; on
every other task its results are held out (a task entry is tuned on its own task).

Settings resolve in this order (later wins): the learner's `Config` defaults
(the published algorithm), then the preset, then the flags the user gave.
`--preset auto` (the default) takes the backend's `*` entry, else none; `--preset paper`
takes none; `--preset NAME` takes `named.NAME`, else `named."NAME/<backend>/<task>"`, else
`named."NAME/<backend>/*"`, else (for `tuned` only) the `*` entry. Checking a preset's keys
and values against the entry point's flags is `driver`'s job, at start-up.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PRESET_DIR = Path(__file__).resolve().parents[1] / "presets"
AUTO = "auto"
PAPER = "paper"
# The opt-in preset of the settings chosen on one task each; where it has no entry for
# the task, the backend's `*` entry runs (`Preset.instead_of` says so).
TUNED = "tuned"


class PresetError(ValueError):
    """A preset that does not exist or cannot be read; the message says which and why."""


@dataclasses.dataclass(frozen=True)
class Preset:
    """One resolved preset: where it came from and the settings it gives."""

    name: str  # "dm_control/*", "tuned/dm_control/cartpole-swingup" or a named one
    path: Path
    evidence: str
    settings: dict[str, Any]
    device: str | None = None  # "gpu": sized for an accelerator
    tuned_on: tuple[str, ...] = ()  # the tasks its settings were chosen on
    # The preset asked for, where it had no entry for the task and this one ran instead
    # (`--preset tuned` on a task without a tuned entry: the backend's `*` entry).
    instead_of: str | None = None

    def tuned_for(self, task: str) -> bool:
        """Whether results on `task` with this preset are on a task it was chosen on."""
        return tuned(self.name, self.tuned_on, task)

    @property
    def file(self) -> str:
        """The preset file's path relative to the project (for messages and config.json)."""
        return f"jax_rl/presets/{self.path.name}"


def tuned(name: str, tuned_on: Sequence[str], task: str) -> bool:
    """Whether preset `name` was chosen on `task` (results there are not held out): a task
    entry is tuned on its own task, a `*` entry on the tasks its `tuned_on` lists."""
    return name.endswith(f"/{task}") or task in tuned_on


def preset_file(policy: str) -> Path:
    return PRESET_DIR / f"{policy.lower()}.toml"


def load_file(policy: str) -> dict[str, dict[str, dict[str, Any]]]:
    """The learner's preset file as {"task": {...}, "named": {...}} ({} if it has none)."""
    path = preset_file(policy)
    if not path.exists():
        return {"task": {}, "named": {}}
    try:
        tables = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise PresetError(f"{path.name}: not valid TOML ({e})") from None
    unknown = set(tables) - {"task", "named"}
    if unknown:
        raise PresetError(
            f"{path.name}: unknown table(s) {', '.join(sorted(unknown))}; "
            'presets live under [task."BACKEND/TASK"] or [named.NAME]'
        )
    return {"task": tables.get("task", {}), "named": tables.get("named", {})}


def _base_settings(policy: str, name: str, base: str, named: dict[str, Any] | None) -> dict:
    """The settings preset `name` inherits from named preset `base`, following `base`'s own
    base to the chain's root (the nearer preset's keys win); a cycle or a missing name is
    refused. `evidence`, `tuned_on` and `base` itself are each preset's own."""
    chain: list[str] = []
    while base is not None:
        if named is None or base not in named:
            file = preset_file(policy).name
            raise PresetError(f"preset {name!r}: base {base!r} is not a named preset of {file}")
        if base in chain or base == name:
            loop = " -> ".join([name, *chain, base])
            raise PresetError(f"preset {name!r}: its bases go round in a circle ({loop})")
        chain.append(base)
        base = named[base].get("base")
    settings: dict[str, Any] = {}
    for ancestor in reversed(chain):  # the root first, so nearer presets win
        own = ("evidence", "tuned_on", "base")
        settings.update({k: v for k, v in named[ancestor].items() if k not in own})
    return settings


def _preset(
    policy: str, name: str, table: dict[str, Any], named: dict[str, Any] | None = None
) -> Preset:
    """The table as a Preset; `base = "NAME"` starts from named preset NAME's settings."""
    settings = dict(table)
    base = settings.pop("base", None)
    if base is not None:
        settings = {**_base_settings(policy, name, base, named), **settings}
    evidence = settings.pop("evidence", None)
    if not isinstance(evidence, str) or not evidence:
        raise PresetError(
            f"preset {name!r} in {preset_file(policy).name} names no evidence (the results "
            "folder that measured it)"
        )
    device = settings.pop("device", None)
    if device not in (None, "gpu"):
        raise PresetError(f'preset {name!r}: device must be "gpu" if given, got {device!r}')
    tuned_on = settings.pop("tuned_on", [])
    if not isinstance(tuned_on, list) or not all(isinstance(t, str) and t for t in tuned_on):
        raise PresetError(f"preset {name!r}: tuned_on must be a list of task names")
    if tuned_on and not name.endswith("/*"):
        raise PresetError(
            f"preset {name!r}: only a backend's `*` entry says tuned_on (a task entry is "
            "tuned on its own task)"
        )
    return Preset(name, preset_file(policy), evidence, settings, device, tuple(tuned_on))


def resolve(policy: str, backend: str, task: str, choice: str = AUTO) -> Preset | None:
    """The preset `choice` selects for `policy` on `backend`/`task`, or None."""
    if choice == PAPER:
        return None
    tables = load_file(policy)
    wildcard = f"{backend}/*"
    task_entries = sorted(k for k in tables["task"] if not k.endswith("/*"))
    if task_entries:  # the defaults hold one entry per backend, none per task
        raise PresetError(
            f"{preset_file(policy).name}: task entries in the defaults "
            f"({', '.join(task_entries)}); a setting chosen on one task goes under "
            f'[named."{TUNED}/BACKEND/TASK"]'
        )
    if choice == AUTO:
        if wildcard in tables["task"]:
            return _preset(policy, wildcard, tables["task"][wildcard], tables["named"])
        return None
    for name in (choice, f"{choice}/{backend}/{task}", f"{choice}/{backend}/*"):
        if name in tables["named"]:
            return _preset(policy, name, tables["named"][name], tables["named"])
    if choice == TUNED and any(k.startswith(f"{TUNED}/") for k in tables["named"]):
        fallback = resolve(policy, backend, task, AUTO)
        return None if fallback is None else dataclasses.replace(fallback, instead_of=TUNED)
    if choice in tables["task"]:
        return _preset(policy, choice, tables["task"][choice], tables["named"])
    entries = sorted(k.split("/", 1)[1] for k in tables["named"] if k.startswith(f"{choice}/"))
    if entries:  # a named preset made for other backends or tasks than this one
        raise PresetError(
            f"preset {choice!r} of {preset_file(policy).name} has no entry for "
            f"{backend}/{task}; it has entries for {', '.join(entries)}"
        )
    known = [AUTO, PAPER, *sorted(named_choices(tables["named"])), *sorted(tables["task"])]
    raise PresetError(f"unknown preset {choice!r} for {policy}; choose from {', '.join(known)}")


def named_choices(named: dict[str, Any]) -> set[str]:
    """What `--preset` accepts among the named presets: NAME for `named.NAME` and for
    `named."NAME/BACKEND/..."` alike."""
    return {name.split("/")[0] for name in named}


def moved_to(policy: str, recorded: str) -> str | None:
    """Where the task entry a run recorded (`dm_control/cartpole-swingup`, from before task
    entries left the defaults) lives now: `--preset tuned` when it holds that entry."""
    if recorded.endswith("/*") or recorded.count("/") != 1:
        return None
    return TUNED if f"{TUNED}/{recorded}" in load_file(policy)["named"] else None


def all_presets(policy: str) -> list[Preset]:
    """Every preset in the learner's file (for checking them all)."""
    tables = load_file(policy)
    return [_preset(policy, name, table, tables["named"]) for kind in ("task", "named")
            for name, table in tables[kind].items()]  # fmt: skip
