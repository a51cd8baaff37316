"""Train TD3 or SAC on a Brax environment with the device-resident pipeline.

    python jax_rl/main_brax.py --policy SAC
    python jax_rl/main_brax.py --policy TD3 --env ant --num_envs 64 --updates_per_step 32
    python jax_rl/main_brax.py --policy SAC --num_seeds 5 --actor_lr 3e-4,1e-3

Environment steps, replay insertion, sampling and updates run inside one
compiled program per chunk; the host only logs, evaluates and saves. Writes
evaluations.csv, train.csv, config.json, summary.json and the final agent under
--save_dir (default runs/brax-<policy>-<env>-seed<seed>).

Several agents (--num_seeds N, and hyperparameters given as comma-separated
values, crossed) train together in one vmapped program, split over the local
devices; each agent writes its files in a folder of its own,
<save_dir>/<policy>[-<setting>]-seed<seed>/, and the run writes ranking.md
(settings ranked by final return) and summary.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a script: put the project root, not jax_rl/, first on the path.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from jax_rl import driver  # noqa: E402
from jax_rl.loops.device import DeviceLoopConfig  # noqa: E402

DEFAULT_ENV = "halfcheetah"


def build_parser() -> argparse.ArgumentParser:
    defaults = DeviceLoopConfig()
    parser = driver.make_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--env", default=DEFAULT_ENV, help="Brax environment name")
    parser.add_argument(
        "--backend",
        default="positional",
        help="Brax physics backend: positional, spring, generalized or mjx",
    )
    parser.add_argument(
        "--num_envs", type=int, default=defaults.num_envs, help="environments stepped in parallel"
    )
    parser.add_argument(
        "--updates_per_step",
        type=int,
        default=defaults.updates_per_step,
        help="k: gradient updates per iteration (one step of every environment)",
    )
    parser.add_argument(
        "--episode_length",
        type=int,
        default=defaults.episode_length,
        help="time limit of an episode",
    )
    driver.add_common_flags(parser, defaults)
    return parser


class BraxBackend:
    kind = "brax"
    run_prefix = "brax-"
    loop_config_class = DeviceLoopConfig

    def task(self, args: argparse.Namespace) -> str:
        return args.env

    def env_fields(self, args: argparse.Namespace) -> dict[str, Any]:
        return {"env": args.env, "backend": args.backend}

    def loop_fields(self, args: argparse.Namespace) -> dict[str, Any]:
        return {
            "num_envs": args.num_envs,
            "updates_per_step": args.updates_per_step,
            "episode_length": args.episode_length,
        }

    def check(self, args: argparse.Namespace) -> None:
        from jax_rl.envs.brax import check_environment

        check_environment(args.env, args.backend)

    def open(self, args: argparse.Namespace, loop_config: Any, seeds: list[int]) -> Any:
        from jax_rl.envs.brax import BraxEnv
        from jax_rl.trainers import DeviceTrainer

        return DeviceTrainer(BraxEnv(args.env, args.backend, loop_config.episode_length))


def main(argv: list[str] | None = None) -> int:
    return driver.main(argv, build_parser(), BraxBackend())


if __name__ == "__main__":
    sys.exit(main())
