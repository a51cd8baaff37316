"""Training from Python: `jax_rl.train`, the command line's route with keyword arguments.

    import jax_rl

    result = jax_rl.train("SAC", "dm_control/walker-walk", max_timesteps=100_000,
                          actor_lr=1e-4, hidden_sizes=(256, 256), save_dir="runs/mine")
    result.final_returns          # [agent] the last evaluation's mean return
    result.evaluations[0]         # agent 0's evaluation rows (step, return_mean, ...)
    state = result.agent(0)       # agent 0's learner state (the final one)
    result.run_dir                # the run folder, as the command line writes it

`env` names a task as the presets do: "dm_control/<domain>-<task>",
"gymnasium/<Env-vN>" (or "gymnasium/<module>:<Env-vN>", importing the module that
registers it), "brax/<env>" or "playground/<Task>"; or it is a user's own environment
(`jax_rl.envs.custom`, docs/custom_envs.md): a factory of Gymnasium or dm_control
environments, or a Brax or Playground environment object. Every other keyword is a
flag of that task's entry point, by the flag's name (`python jax_rl/main_gym.py --policy
SAC --help` lists them): the same parser checks it, the same presets apply (`preset=`),
and the same driver trains. So `jax_rl.train(...)` runs exactly what the matching
command runs, and a bad setting raises ValueError with the line the command would print.
Values: numbers and strings as they are, sizes as tuples (`hidden_sizes=(256, 256)`),
a sweep as a list (`actor_lr=[1e-4, 3e-4]`), switches as booleans.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jax_rl.run.saved import ENTRY_POINTS

# Task prefix -> (entry point module, its Backend class): the table `jax_rl.run.saved` opens
# run folders with, one per env_backend.
BACKENDS = ENTRY_POINTS


@dataclasses.dataclass
class TrainResult:
    """A finished run: its folder, every agent's evaluations, and its agents on demand."""

    run_dir: Path
    evaluations: list[list[dict[str, float]]]  # per agent: one row per evaluation
    config: dict[str, Any]  # the run's config.json
    env: Any = None  # the environment handed to `train` (a custom one), to reopen the run with

    @property
    def final_returns(self) -> list[float]:
        """Each agent's last evaluation return (mean over its episodes)."""
        return [rows[-1]["return_mean"] for rows in self.evaluations]

    def agent(self, index: int = 0, checkpoint: int | None = None) -> Any:
        """Agent `index`'s learner state (the final one, or checkpoint `checkpoint`'s):
        the `State` its learner's `act` takes."""
        from jax_rl.run import saved

        run = saved.open_run(self.run_dir, env=self.env)
        (agent,) = run.select(index)
        run.check_checkpoint(checkpoint)
        env = run.open_env(run.fresh_seed(agent), None)
        return run.load_agent(
            agent,
            env.obs_size,
            env.action_size,
            checkpoint,
            actor_obs_size=getattr(env, "actor_obs_size", 0),
        )


def task_flags(env: str) -> tuple[str, list[str]]:
    """The backend of a task name and the flags that choose it (ValueError if malformed)."""
    kind, _, name = env.partition("/")
    if kind not in BACKENDS or not name:
        choices = ", ".join(f"{k}/..." for k in BACKENDS)
        raise ValueError(f"env {env!r}: give <backend>/<task>, one of {choices}")
    if kind == "dm_control":
        domain, dash, task = name.partition("-")
        if not dash:
            raise ValueError(f"env {env!r}: dm_control tasks are <domain>-<task>, e.g. walker-walk")
        return kind, ["--domain_name", domain, "--task_name", task]
    return kind, ["--env", name]


def flag_values(settings: dict[str, Any], switches: set[str]) -> list[str]:
    """The command-line form of keyword settings: --name value (a switch without one)."""
    argv = []
    for name, value in settings.items():
        if name in switches:  # store_true flags: present or absent
            if value:
                argv.append(f"--{name}")
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, list | tuple):
            text = ",".join(str(v) for v in value)
        else:
            text = str(value)
        argv += [f"--{name}", text]
    return argv


# Flags that name the task: a custom environment is the task itself.
TASK_FLAGS = ("env", "domain_name", "task_name")


def train(
    policy: str = "TD3",
    env: Any = "dm_control/cartpole-swingup",
    *,
    progress: bool = True,
    **settings: Any,
) -> TrainResult:
    """Train `policy` on `env` as the command line would with these flags; see the module
    docstring. ValueError for a bad task or setting (before anything compiles),
    RuntimeError if training itself fails (its message names the run folder)."""
    from jax_rl.run import cli, driver

    custom = None
    if isinstance(env, str):
        kind, argv = task_flags(env)
        label = env
    else:
        from jax_rl.envs.custom import identify

        custom = identify(env)  # ValueError (one line) for one the learners cannot drive
        kind, argv, label = custom.kind, [], f"{custom.kind} {custom.name}"
        named = [name for name in settings if name in TASK_FLAGS]
        if named:
            raise ValueError(f"{named[0]}= names a task; env= is the environment already")
        if settings.get("engine", "local") != "local":
            raise ValueError(
                f"engine={settings['engine']!r} builds each worker's environments from the "
                "task's name; an environment handed over as an object trains with the local "
                "engine"
            )
    module_name, backend_name = BACKENDS[kind]
    module = importlib.import_module(module_name)
    parser = module.build_parser()
    flags = {a.dest: a for a in parser._actions if a.option_strings}
    unknown = [name for name in settings if name not in flags or name == "help"]
    if unknown:
        raise ValueError(
            f"unknown setting {unknown[0]!r} for {label}: the settings are the flags of "
            f"jax_rl/{module_name.split('.')[-1]}.py (--policy {policy} --help lists them)"
        )
    switches = {name for name, a in flags.items() if a.nargs == 0}
    argv = ["--policy", policy, *argv, *flag_values(settings, switches)]
    if not progress:
        argv.append("--no_progress")
    backend = getattr(module, backend_name)(custom=custom)
    try:
        finished = driver.run(argv, parser, backend)
    except cli.UsageError as e:
        raise ValueError(e.message) from None
    if finished.code != 0 or finished.save_dir is None:
        where = f"; see {finished.save_dir}" if finished.save_dir else ""
        raise RuntimeError(f"training stopped with exit code {finished.code}{where}")
    return read_result(finished.save_dir, None if custom is None else env)


def read_result(run_dir: Path, env: Any = None) -> TrainResult:
    """A finished run folder as a TrainResult. `env`: a run's custom environment (the
    factory or object it trained on), handed over again where config.json has no import
    path for it (`jax_rl.envs.custom`)."""
    from jax_rl.run import saved

    run = saved.open_run(run_dir, env=env, lazy_env=True)  # the results need no environment
    return TrainResult(
        run_dir=Path(run_dir),
        evaluations=[_rows(agent.directory / "evaluations.csv") for agent in run.agents],
        config=run.config,
        env=env,
    )


def _rows(path: Path) -> list[dict[str, float]]:
    with path.open(newline="") as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


__all__: Sequence[str] = ("TrainResult", "train", "read_result")
