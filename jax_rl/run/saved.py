"""A run folder read back: its task, its agents and their parameters.

`open_run(DIR)` reads the run's `config.json` and opens its task through the
same backend its entry point trained with (`ENTRY_POINTS`: the entry point's
parser and `Backend`, so that a name is checked and an environment built
exactly as in training). `load_agent` returns an agent's learner state: the
final one (`agent.msgpack`, written at the end of training) or that of a
checkpoint (`checkpoints/<step>`, only the agents' leaves are read, not the
replay buffer).

A run that trained on a user's own environment (a factory or object handed to
`jax_rl.train`, `jax_rl.envs.custom`) records it in config.json as `custom_env`; it is
opened again from the environment handed to `open_run` (`env=`), else from the factory
its import path names, else not at all: a one-line RunFolderError saying to hand it
over (`lazy_env` defers that error to the first environment opened, for reading results).

Anything that is not a readable run is a `RunFolderError` whose message is one
line, for the command-line tools to print.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import jax

from jax_rl import algos

# env_backend (config.json) -> the entry point that trains it: (module, Backend class).
ENTRY_POINTS = {
    "dm_control": ("jax_rl.main_dm_control", "DMControlBackend"),
    "gymnasium": ("jax_rl.main_gym", "GymnasiumBackend"),
    "brax": ("jax_rl.main_brax", "BraxBackend"),
    "playground": ("jax_rl.main_brax", "BraxBackend"),
}
FRESH_SEED_OFFSET = 1_000_003  # where `fresh_seed` starts looking


class RunFolderError(ValueError):
    """Not a run folder, or a part of it that is missing or unreadable (one line)."""


@dataclasses.dataclass(frozen=True)
class SavedAgent:
    """One agent of a run: its place in the population, seed, folder and settings."""

    index: int
    seed: int
    directory: Path
    algo_config: Any

    @property
    def name(self) -> str:
        return self.directory.name


@dataclasses.dataclass
class SavedRun:
    """A run folder, opened (its task checked, nothing compiled)."""

    directory: Path
    config: dict[str, Any]
    algo: ModuleType
    agents: list[SavedAgent]
    backend: Any  # the entry point's Backend (driver.Backend)
    args: argparse.Namespace  # the entry point's flags, with the run's task
    loop_config: Any

    @property
    def kind(self) -> str:
        return str(self.config["env_backend"])

    @property
    def task(self) -> str:
        return str(self.backend.task(self.args))

    def select(self, agent: int | None) -> list[SavedAgent]:
        """Every agent, or agent `agent` alone (RunFolderError if there is none)."""
        if agent is None:
            return self.agents
        if not 0 <= agent < len(self.agents):
            raise RunFolderError(
                f"--agent {agent}: {self.directory} holds agents 0-{len(self.agents) - 1}"
            )
        return [self.agents[agent]]

    def used_seeds(self) -> set[int]:
        """Every seed the training drew from: its agents', their evaluation environments'
        (host loop) and the uniform random baseline's (device loop); see `trainers`."""
        from jax_rl.run.trainers import EVAL_SEED_OFFSET

        seeds = set()
        for agent in self.agents:
            seeds |= {agent.seed, agent.seed + 1, agent.seed + EVAL_SEED_OFFSET}
        return seeds

    def fresh_seed(self, agent: SavedAgent) -> int:
        """A seed for `agent`'s episodes that the training never used."""
        from jax_rl.loops.common import MAX_SEED

        seed = (agent.seed + FRESH_SEED_OFFSET) % MAX_SEED
        while seed in self.used_seeds():
            seed = (seed + 1) % MAX_SEED
        return seed

    def open_env(self, seed: int, size: tuple[int, int] | None) -> Any:
        """The task's environment for watching (`Backend.open_for_watching`); RunFolderError
        for one that cannot draw frames of `size` (a custom environment's own mode)."""
        from jax_rl.envs import UnsupportedEnvironmentError

        try:
            return self.backend.open_for_watching(self.args, self.loop_config, seed, size)
        except UnsupportedEnvironmentError as e:
            raise RunFolderError(str(e)) from None

    def checkpoint_steps(self) -> list[int]:
        from jax_rl.io.checkpoint import Checkpointer

        return Checkpointer(self.directory / "checkpoints").steps()

    def check_checkpoint(self, step: int | None) -> None:
        """RunFolderError unless checkpoint `step` exists (None: the final agent, whose
        agent.msgpack files must exist)."""
        if step is None:
            for agent in self.agents:
                if not (agent.directory / "agent.msgpack").is_file():
                    steps = self.checkpoint_steps()
                    hint = (
                        f"; pass --checkpoint STEP (saved: {', '.join(map(str, steps))})"
                        if steps
                        else ""
                    )
                    raise RunFolderError(
                        f"{agent.directory} has no agent.msgpack (written when training ends){hint}"
                    )
            return
        steps = self.checkpoint_steps()
        if step not in steps:
            saved = ", ".join(map(str, steps)) if steps else "none"
            raise RunFolderError(
                f"--checkpoint {step}: no such checkpoint in {self.directory / 'checkpoints'} "
                f"(saved steps: {saved})"
            )

    def load_agent(
        self,
        agent: SavedAgent,
        obs_size: int,
        action_size: int,
        checkpoint: int | None = None,
        actor_obs_size: int = 0,
    ) -> Any:
        """The agent's learner state: final (agent.msgpack) or of checkpoint `checkpoint`.
        `actor_obs_size` > 0: the environment's [state | privileged state] split, which
        the trainer gave the learner (`trainers.DeviceTrainer`)."""
        config = agent.algo_config
        if actor_obs_size:
            config = config.replace(actor_obs_size=actor_obs_size)
        num_envs = getattr(self.loop_config, "num_envs", 1)  # the device loop's; host: 1
        # Jitted: eagerly, each operation of the initialisers would compile on its own.
        init = jax.jit(
            self.algo.init,
            static_argnums=(1, 2, 4),
            compiler_options=algos.init_compiler_options(),
        )
        template = init(jax.random.key(0), obs_size, action_size, config, num_envs)
        if checkpoint is None:
            return _read_msgpack(agent.directory / "agent.msgpack", template)
        return self._from_checkpoint(agent, template, checkpoint)

    def _from_checkpoint(self, agent: SavedAgent, template: Any, step: int) -> Any:
        from jax_rl.core import population
        from jax_rl.io.checkpoint import Checkpointer, CheckpointError

        axes = population.agent_axes(template)
        stacked = population.repeat_agent(template, axes, len(self.agents))
        # Where the loops keep their agents in a checkpoint (loops.host / loops.device).
        prefix = (
            "['learner'].agent" if self.kind in ("dm_control", "gymnasium") else ("['carry'].agent")
        )
        try:
            agents = Checkpointer(self.directory / "checkpoints").restore_part(
                stacked, prefix, step
            )
        except CheckpointError as e:
            raise RunFolderError(str(e)) from None
        return population.index_agent(agents, axes, agent.index)


# --- What jax_rl.watch.render and jax_rl.watch.evaluate share -------------------------------------


def add_selection_flags(parser: argparse.ArgumentParser) -> None:
    """RUN_DIR, --checkpoint, --agent and --seed."""
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run's folder")
    parser.add_argument(
        "--checkpoint",
        type=int,
        default=None,
        metavar="STEP",
        help="the agent of checkpoint STEP (in RUN_DIR/checkpoints) instead of the final one",
    )
    parser.add_argument(
        "--agent",
        type=int,
        default=None,
        metavar="K",
        help="of a population, agent K only (0-based, as config.json's agents list them)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the episodes (default: one the training never used, from each "
        "agent's seed); a seed the training used is refused",
    )


def open_selection(args: argparse.Namespace) -> tuple[SavedRun, list[SavedAgent]]:
    """The run and the agents the flags pick, every check done (RunFolderError if not)."""
    run = open_run(args.run_dir)
    agents = run.select(args.agent)
    run.check_checkpoint(args.checkpoint)
    from jax_rl.loops.common import MAX_SEED

    if args.seed is not None and not 0 <= args.seed < MAX_SEED:
        raise RunFolderError(f"--seed must be in [0, {MAX_SEED}), got {args.seed}")
    if args.seed is not None and args.seed in run.used_seeds():
        raise RunFolderError(
            f"--seed {args.seed} is one the training used; choose another (or none: a "
            "fresh one is picked)"
        )
    return run, agents


def episode_seed(run: SavedRun, agent: SavedAgent, seed: int | None) -> int:
    """--seed, else a fresh one for `agent`."""
    return run.fresh_seed(agent) if seed is None else seed


def _read_msgpack(path: Path, template: Any) -> Any:
    import flax.serialization

    try:
        return flax.serialization.from_bytes(template, path.read_bytes())
    except (OSError, ValueError, KeyError, TypeError) as e:
        detail = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise RunFolderError(f"{path} cannot be read as this run's agent ({detail})") from None


def read_config(path: Path) -> dict[str, Any]:
    """A config.json as a dict, or RunFolderError."""
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise RunFolderError(f"{path} cannot be read ({e})") from None
    if not isinstance(config, dict):
        raise RunFolderError(f"{path} is not a run's config.json")
    return config


def open_run(directory: Path, env: Any = None, *, lazy_env: bool = False) -> SavedRun:
    """The run saved in `directory` (a run's folder, or one agent's folder of a population).

    Checks the folder, its config.json and its task; imports the backend but
    compiles nothing. RunFolderError (one line) where any of that fails. `env`: the
    custom environment the run trained on, handed over again (see the module docstring).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise RunFolderError(f"{directory}: no such folder")
    if not (directory / "config.json").is_file():
        raise RunFolderError(
            f"{directory} is not a run folder (no config.json; runs are written by "
            "jax_rl/main_dm_control.py, main_gym.py or main_brax.py)"
        )
    config = read_config(directory / "config.json")
    missing = [k for k in ("policy", "env_backend", "loop", "algo") if k not in config]
    if missing:
        raise RunFolderError(f"{directory / 'config.json'} lacks {', '.join(missing)}")
    if config["env_backend"] not in ENTRY_POINTS:
        raise RunFolderError(
            f"{directory}: unknown env_backend {config['env_backend']!r} "
            f"(known: {', '.join(ENTRY_POINTS)})"
        )
    try:
        algo = algos.get(config["policy"])
    except algos.UnknownPolicyError as e:
        raise RunFolderError(str(e)) from None
    backend, args = _entry_point(directory, config, env, lazy_env)
    try:
        loop_config = backend.loop_config_class(**config["loop"])
    except (TypeError, ValueError) as e:
        raise RunFolderError(f"{directory / 'config.json'}: bad loop settings ({e})") from None
    agents = _agents(directory, config, algo)
    return SavedRun(directory, config, algo, agents, backend, args, loop_config)


def _entry_point(
    directory: Path, config: dict[str, Any], env: Any, lazy_env: bool
) -> tuple[Any, argparse.Namespace]:
    """The trainer's Backend and its flags set to the run's task, the task checked."""
    from jax_rl.envs import UnknownEnvironmentError

    module_name, class_name = ENTRY_POINTS[config["env_backend"]]
    module = importlib.import_module(module_name)
    if "custom_env" in config:
        backend = getattr(module, class_name)(custom=_custom_env(directory, config, env, lazy_env))
    elif env is not None:
        raise RunFolderError(
            f"{directory} trained on a named {config['env_backend']} task; it takes no env="
        )
    else:
        backend = getattr(module, class_name)()
    args = module.build_parser().parse_args(["--policy", config["policy"]])
    # The flags that name the task (env_fields of the default task) take the run's values.
    for name in backend.env_fields(args):
        if name in config and hasattr(args, name):
            setattr(args, name, config[name])
    try:
        backend.check(args)
    except UnknownEnvironmentError as e:
        raise RunFolderError(str(e)) from None
    return backend, args


def _custom_env(directory: Path, config: dict[str, Any], env: Any, lazy_env: bool) -> Any:
    """The run's custom environment (`jax_rl.envs.custom.reopen`); where it cannot be had
    and `lazy_env`, a stand-in whose environments raise the RunFolderError instead."""
    from jax_rl.envs import custom

    try:
        return custom.reopen(config, env)
    except ValueError as e:
        problem = RunFolderError(f"{directory}: {e}")
    if not lazy_env:
        raise problem

    def unavailable() -> Any:
        raise problem

    record = config["custom_env"]
    return custom.CustomEnv(
        config["env_backend"], str(config["env"]), unavailable, None, str(record.get("type"))
    )


def _agents(directory: Path, config: dict[str, Any], algo: ModuleType) -> list[SavedAgent]:
    """The run's agents: one per entry of a population's `agents`, else the run itself
    (also one agent's folder of a population: its config.json has its own `seed`)."""
    if "agents" not in config or "seed" in config:
        seed = int(config.get("seed", config["loop"]["seed"]))
        return [SavedAgent(0, seed, directory, _algo_config(algo, config["algo"], directory))]
    agents = []
    for entry in config["agents"]:
        folder = directory / entry["folder"]
        if not (folder / "config.json").is_file():
            raise RunFolderError(f"{folder}: the population's agent folder is missing")
        own = read_config(folder / "config.json")
        algo_config = _algo_config(algo, own.get("algo", config["algo"]), folder)
        agents.append(SavedAgent(int(entry["index"]), int(entry["seed"]), folder, algo_config))
    return agents


def _algo_config(algo: ModuleType, values: dict[str, Any], where: Path) -> Any:
    """The learner's Config from config.json's values (JSON lists back to tuples)."""
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    try:
        return algo.Config(**fields)
    except (TypeError, ValueError) as e:
        raise RunFolderError(
            f"{where / 'config.json'}: bad {algo.__name__} settings ({e})"
        ) from None
