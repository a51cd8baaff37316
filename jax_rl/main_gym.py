"""Train TD3, SAC or MPO on a Gymnasium environment (HalfCheetah-v5, ...) with the host loop.

    python jax_rl/main_gym.py --policy SAC --env HalfCheetah-v5
    python jax_rl/main_gym.py --policy TD3 --env Hopper-v5 --num_seeds 3
    PYTHONPATH=. python jax_rl/main_gym.py --policy SAC --env my_envs:PointLine-v0

The flags are main_dm_control.py's, with --env (a Gymnasium id with Box actions and
flat Box observations; `module:Env-vN` imports the module, which registers Env-vN) for
--domain_name and --task_name. Writes the same files, under --save_dir (default
runs/<policy>-<env>-seed<seed>); see docs/gymnasium.md and docs/custom_envs.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jax_rl.envs.custom import CustomEnv
    from jax_rl.envs.gymnasium import GymnasiumEnv

if __package__ in (None, ""):
    # Run as a script: put the project root, not jax_rl/, first on the path.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from jax_rl.loops.host import HostLoopConfig  # noqa: E402
from jax_rl.main_dm_control import add_collection_flags  # noqa: E402
from jax_rl.run import driver  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = driver.make_parser(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--env",
        default="HalfCheetah-v5",
        help="Gymnasium environment id (Box actions); module:Env-vN imports module first",
    )
    add_collection_flags(parser)
    driver.add_common_flags(parser, HostLoopConfig())
    return parser


class GymnasiumBackend:
    """--env's environment, or `custom`: a factory handed to `jax_rl.train`
    (`jax_rl.envs.custom`), which then makes every environment and names the task."""

    kind = "gymnasium"
    run_prefix = ""
    loop_config_class = HostLoopConfig

    def __init__(self, custom: CustomEnv | None = None) -> None:
        self.custom = custom

    def task(self, args: argparse.Namespace) -> str:
        return str(args.env) if self.custom is None else self.custom.name

    def env_fields(self, args: argparse.Namespace) -> dict[str, Any]:
        if self.custom is not None:
            return {"env": self.custom.name, "custom_env": self.custom.record()}
        return {"env": args.env}

    def make_env(
        self, args: argparse.Namespace, seed: int, render_size: tuple[int, int] | None = None
    ) -> GymnasiumEnv:
        """One environment (`check` has passed), seeded with `seed`."""
        from jax_rl.envs.gymnasium import GymnasiumEnv

        if self.custom is None:
            return GymnasiumEnv(args.env, seed=seed, render_size=render_size)
        return GymnasiumEnv.of(self.custom.make(), self.custom.name, seed, render_size)

    def loop_fields(self, args: argparse.Namespace) -> dict[str, Any]:
        return {
            "noise_color": args.noise_color,
            "action_repeat": args.action_repeat,
            "updates_per_step": args.updates_per_step,
            "population_loop": args.population_loop,
        }

    def check(self, args: argparse.Namespace) -> None:
        from jax_rl.envs.gymnasium import check_env
        from jax_rl.envs.repeat import check_action_repeat

        if self.custom is None:
            check_env(args.env)
        elif getattr(args, "video_every", 0):  # a frame size of its own: only its mode counts
            self.make_env(args, seed=0, render_size=(1, 1))
        if args.action_repeat != 1:
            frames = self.make_env(args, seed=0).episode_frames
            check_action_repeat(args.action_repeat, frames, self.task(args))

    def open(self, args: argparse.Namespace, loop_config: Any, seeds: list[int]) -> Any:
        from jax_rl.run.trainers import HostTrainer

        return HostTrainer.for_seeds(
            lambda seed: self.make_env(args, seed), seeds, loop_config.action_repeat
        )

    def open_for_watching(
        self, args: argparse.Namespace, loop_config: Any, seed: int, size: tuple[int, int] | None
    ) -> Any:
        from jax_rl.envs.repeat import repeat_actions

        return repeat_actions(self.make_env(args, seed, size), loop_config.action_repeat)


def main(argv: list[str] | None = None) -> int:
    return driver.main(argv, build_parser(), GymnasiumBackend())


if __name__ == "__main__":
    sys.exit(main())
