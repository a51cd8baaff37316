"""Train TD3, SAC or MPO on a Gymnasium environment (HalfCheetah-v5, ...) with the host loop.

    python jax_rl/main_gym.py --policy SAC --env HalfCheetah-v5
    python jax_rl/main_gym.py --policy TD3 --env Hopper-v5 --num_seeds 3

The flags are main_dm_control.py's, with --env (a Gymnasium id with Box actions and
flat Box observations) for --domain_name and --task_name. Writes the same files,
under --save_dir (default runs/<policy>-<env>-seed<seed>); see docs/gymnasium.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a script: put the project root, not jax_rl/, first on the path.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from jax_rl.loops.host import HostLoopConfig  # noqa: E402
from jax_rl.main_dm_control import add_collection_flags  # noqa: E402
from jax_rl.run import driver  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = driver.make_parser(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--env", default="HalfCheetah-v5", help="Gymnasium environment id (Box actions)"
    )
    add_collection_flags(parser)
    driver.add_common_flags(parser, HostLoopConfig())
    return parser


class GymnasiumBackend:
    kind = "gymnasium"
    run_prefix = ""
    loop_config_class = HostLoopConfig

    def task(self, args: argparse.Namespace) -> str:
        return str(args.env)

    def env_fields(self, args: argparse.Namespace) -> dict[str, Any]:
        return {"env": args.env}

    def loop_fields(self, args: argparse.Namespace) -> dict[str, Any]:
        return {
            "noise_color": args.noise_color,
            "action_repeat": args.action_repeat,
            "updates_per_step": args.updates_per_step,
        }

    def check(self, args: argparse.Namespace) -> None:
        from jax_rl.envs.gymnasium import GymnasiumEnv, check_env
        from jax_rl.envs.repeat import check_action_repeat

        check_env(args.env)
        if args.action_repeat != 1:
            env = GymnasiumEnv(args.env, seed=0)
            check_action_repeat(args.action_repeat, env.episode_frames, args.env)

    def open(self, args: argparse.Namespace, loop_config: Any, seeds: list[int]) -> Any:
        from jax_rl.envs.gymnasium import GymnasiumEnv
        from jax_rl.run.trainers import HostTrainer

        return HostTrainer.for_seeds(
            lambda seed: GymnasiumEnv(args.env, seed=seed), seeds, loop_config.action_repeat
        )

    def open_for_watching(
        self, args: argparse.Namespace, loop_config: Any, seed: int, size: tuple[int, int] | None
    ) -> Any:
        from jax_rl.envs.gymnasium import GymnasiumEnv
        from jax_rl.envs.repeat import repeat_actions

        env = GymnasiumEnv(args.env, seed=seed, render_size=size)
        return repeat_actions(env, loop_config.action_repeat)


def main(argv: list[str] | None = None) -> int:
    return driver.main(argv, build_parser(), GymnasiumBackend())


if __name__ == "__main__":
    sys.exit(main())
