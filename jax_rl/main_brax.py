"""Train TD3, SAC or MPO on a Brax or MuJoCo Playground task with the device-resident pipeline.

    python jax_rl/main_brax.py --policy SAC
    python jax_rl/main_brax.py --policy TD3 --env ant --num_envs 64 --updates_per_step 32
    python jax_rl/main_brax.py --policy SAC --env CartpoleSwingup
    python jax_rl/main_brax.py --policy SAC --num_seeds 5 --actor_lr 3e-4,1e-3

Environment steps, replay insertion, sampling and updates run inside one
compiled program per chunk; the host only logs, evaluates and saves. Writes
evaluations.csv, train.csv, config.json, summary.json and the final agent under
--save_dir (default runs/brax-<policy>-<env>-seed<seed>).

--env takes a Brax environment (halfcheetah, ant, ...) or a task of MuJoCo
Playground's DM Control Suite on MJX (CartpoleSwingup, CheetahRun, WalkerWalk,
...: jax_rl/envs/playground.py). A Playground task's defaults for --num_envs,
--updates_per_step and --episode_length come from that module's table and
Playground's published task configuration; presets key it as
playground/<task>.

Several agents (--num_seeds N, and hyperparameters given as comma-separated
values, crossed) train together in one vmapped program, split over the local
devices; each agent writes its files in a folder of its own,
<save_dir>/<policy>[-<setting>]-seed<seed>/, and the run writes ranking.md
(settings ranked by final return) and summary.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jax_rl.envs.custom import CustomEnv

if __package__ in (None, ""):
    # Run as a script: put the project root, not jax_rl/, first on the path.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from jax_rl.envs import point_mass  # noqa: E402
from jax_rl.envs.brax import CUSTOM_BACKEND  # noqa: E402
from jax_rl.loops.device import DeviceLoopConfig  # noqa: E402
from jax_rl.run import driver  # noqa: E402

DEFAULT_ENV = "halfcheetah"
BRAX_BACKEND = "positional"  # the fastest of Brax's pipelines on a CPU
BRAX_BACKENDS = ("positional", "spring", "generalized", "mjx")  # envs.brax.BACKENDS


def build_parser() -> argparse.ArgumentParser:
    defaults = DeviceLoopConfig()
    parser = driver.make_parser(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--env",
        default=DEFAULT_ENV,
        help="Brax environment (halfcheetah, ant, ...), MuJoCo Playground DM Control "
        "task (CartpoleSwingup, CheetahRun, ...), or point_mass (a JAX-native probe that "
        "compiles in seconds: jax_rl/envs/point_mass.py)",
    )
    parser.add_argument(
        "--backend",
        default=None,
        help=f"physics: for Brax {', '.join(BRAX_BACKENDS)} (None: {BRAX_BACKEND}); for "
        "Playground jax (MJX's JAX implementation, the only one)",
    )
    task_default = "None: {brax} for Brax, the task's for Playground"
    parser.add_argument(
        "--num_envs",
        type=int,
        default=None,
        help=f"environments stepped in parallel ({task_default.format(brax=defaults.num_envs)})",
    )
    parser.add_argument(
        "--updates_per_step",
        type=int,
        default=None,
        help="k: gradient updates per iteration, one step of every environment "
        f"({task_default.format(brax=defaults.updates_per_step)})",
    )
    parser.add_argument(
        "--asymmetric_obs",
        default="auto",
        choices=("auto", "on", "off"),
        help="for a Playground task observing `state` and `privileged_state`: auto/on give "
        "the actor the state and the critics the privileged state (on: refuse a task "
        "without them); off: both see the state (jax_rl/envs/observation.py)",
    )
    parser.add_argument(
        "--episode_length",
        type=int,
        default=None,
        help=f"time limit of an episode ({task_default.format(brax=defaults.episode_length)})",
    )
    driver.add_common_flags(parser, defaults)
    return parser


def is_playground(args: argparse.Namespace) -> bool:
    """Whether --env names a Playground task (a Brax run does not import Playground)."""
    from jax_rl.envs import brax, playground

    if args.env == point_mass.NAME:
        return False
    return args.env not in brax.environment_names() and playground.is_task(args.env)


def check_environment(name: str, backend: str | None) -> None:
    """Raise UnknownEnvironmentError for a name in neither registry (listing both), or a
    backend the name's registry does not have."""
    from jax_rl.envs import UnknownEnvironmentError, brax, playground

    if name == point_mass.NAME:
        if backend not in (None, CUSTOM_BACKEND):
            raise UnknownEnvironmentError(
                f"{name} is stepped in JAX alone: it takes no --backend (given {backend!r})"
            )
    elif name in brax.environment_names():
        brax.check_environment(name, backend or BRAX_BACKEND)
    elif playground.is_task(name):
        playground.check_environment(name, backend or playground.DEFAULT_IMPL)
    else:
        raise UnknownEnvironmentError(
            f"unknown Brax environment or Playground task {name!r}; valid environments: "
            f"Brax: {', '.join(brax.environment_names())}; MuJoCo Playground (DM Control "
            f"Suite): {', '.join(playground.environment_names())}; the probe: "
            f"{point_mass.NAME}"
        )


class BraxBackend:
    """Brax's environments and Playground's DM Control tasks: one device pipeline. `check`
    (which the driver calls first) sets `kind` and `run_prefix` from the task's registry.
    With `custom` (a Brax or Playground environment handed to `jax_rl.train`,
    `jax_rl.envs.custom`) that environment is the task, whatever --env says."""

    kind = "brax"
    run_prefix = "brax-"
    loop_config_class = DeviceLoopConfig

    def __init__(self, custom: CustomEnv | None = None) -> None:
        self.custom = custom
        self._object: Any = None  # the custom environment, made once: one for every use

    def custom_object(self) -> Any:
        """The custom environment object (its factory called once)."""
        assert self.custom is not None
        if self._object is None:
            self._object = self.custom.make()
        return self._object

    def playground(self, args: argparse.Namespace) -> bool:
        if self.custom is not None:
            return self.custom.kind == "playground"
        return is_playground(args)

    def check(self, args: argparse.Namespace) -> None:
        from jax_rl.envs import UnknownEnvironmentError

        if self.custom is None:
            check_environment(args.env, args.backend)
        elif args.backend not in (None, CUSTOM_BACKEND):
            raise UnknownEnvironmentError(
                f"{self.custom.name} is stepped by its own code: it takes no --backend "
                f"(given {args.backend!r})"
            )
        if self.playground(args):
            self.kind, self.run_prefix = "playground", "playground-"
        elif args.asymmetric_obs == "on":
            raise UnknownEnvironmentError(
                f"--asymmetric_obs on: Brax's {self.task(args)} observes an array, not a dict "
                "with 'state' and 'privileged_state'; use --asymmetric_obs auto or off"
            )

    def task(self, args: argparse.Namespace) -> str:
        return args.env if self.custom is None else self.custom.name

    def physics(self, args: argparse.Namespace) -> str:
        from jax_rl.envs import playground

        if args.env == point_mass.NAME or self.custom is not None:
            return CUSTOM_BACKEND
        default = playground.DEFAULT_IMPL if is_playground(args) else BRAX_BACKEND
        return args.backend or default

    def task_defaults(self, args: argparse.Namespace) -> Any:
        """A Playground task's defaults (`playground.TaskDefaults`), else Brax's."""
        from jax_rl.envs import playground

        if self.custom is not None and self.playground(args):
            return playground.defaults_of(self.custom_object())
        if self.playground(args):
            return playground.task_defaults(args.env)
        return DeviceLoopConfig()

    def env_fields(self, args: argparse.Namespace) -> dict[str, Any]:
        fields: dict[str, Any] = {"env": self.task(args), "backend": self.physics(args)}
        if self.custom is not None:
            fields["custom_env"] = self.custom.record()
        if self.playground(args):
            fields["action_repeat"] = self.task_defaults(args).action_repeat
            fields["asymmetric_obs"] = args.asymmetric_obs
        return fields

    def loop_fields(self, args: argparse.Namespace) -> dict[str, Any]:
        """The flags given (or a preset's), else the task's defaults."""
        defaults = self.task_defaults(args)
        names = ("num_envs", "updates_per_step", "episode_length")
        return {
            name: getattr(defaults, name) if getattr(args, name) is None else getattr(args, name)
            for name in names
        }

    def open(self, args: argparse.Namespace, loop_config: Any, seeds: list[int]) -> Any:
        from jax_rl.run.trainers import DeviceTrainer

        return DeviceTrainer(self.open_for_watching(args, loop_config, seeds[0], None))

    def open_for_watching(
        self, args: argparse.Namespace, loop_config: Any, seed: int, size: tuple[int, int] | None
    ) -> Any:
        """The batched environment (one for every agent: seeds are keys on the device;
        the player draws frames from its `mj_model`)."""
        from jax_rl.envs.brax import BraxEnv

        if self.playground(args):
            return self._playground_env(args, loop_config)
        if self.custom is not None:
            return BraxEnv.wrap(self.custom.name, self.custom_object(), loop_config.episode_length)
        if args.env == point_mass.NAME:
            return point_mass.point_mass_env(loop_config.episode_length)
        return BraxEnv(args.env, self.physics(args), loop_config.episode_length)

    def _playground_env(self, args: argparse.Namespace, loop_config: Any) -> Any:
        from jax_rl import algos
        from jax_rl.envs import playground
        from jax_rl.envs.observation import NoPrivilegedStateError
        from jax_rl.run import cli

        mode = getattr(args, "asymmetric_obs", "auto")
        length = loop_config.episode_length
        try:
            if self.custom is not None:
                env = playground.wrap_env(self.custom_object(), self.custom.name, length, mode)
            else:
                env = playground.make_env(args.env, self.physics(args), length, asymmetric_obs=mode)
        except NoPrivilegedStateError as e:
            cli.fail(str(e))
        learner_fields = {f.name for f in dataclasses.fields(algos.get(args.policy).Config)}
        if env.actor_obs_size and "actor_obs_size" not in learner_fields:
            cli.fail(
                f"{self.task(args)} gives the critics a privileged state, which --policy "
                f"{args.policy} cannot split from the actor's; use TD3 or SAC, or "
                "--asymmetric_obs off"
            )
        return env


def main(argv: list[str] | None = None) -> int:
    return driver.main(argv, build_parser(), BraxBackend())


if __name__ == "__main__":
    sys.exit(main())
