"""Train TD3, SAC or MPO on a dm_control task with the host loop.

    python jax_rl/main_dm_control.py --policy SAC --domain_name cartpole --task_name swingup
    python jax_rl/main_dm_control.py --policy MPO --num_seeds 3 --epsilon_std 1e-5,1e-4

Writes evaluations.csv, train.csv, config.json, summary.json and the final
agent under --save_dir (default runs/<policy>-<domain>-<task>-seed<seed>).

Several agents (--num_seeds N, and hyperparameters given as comma-separated
values, crossed) train together: each has its own environment, and every step
makes one vmapped learner call for all of them. Each agent writes its files in
a folder of its own, <save_dir>/<policy>[-<setting>]-seed<seed>/, and the run
writes ranking.md (settings ranked by final return) and summary.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jax_rl.envs.custom import CustomEnv
    from jax_rl.envs.dm_control import DMControlEnv

if __package__ in (None, ""):
    # Run as a script: put the project root, not jax_rl/, first on the path.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from jax_rl.loops.host import POPULATION_LOOPS, HostLoopConfig  # noqa: E402
from jax_rl.run import cli, driver  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = driver.make_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--domain_name", default="cartpole", help="dm_control domain")
    parser.add_argument("--task_name", default="swingup", help="dm_control task of that domain")
    add_collection_flags(parser)
    driver.add_common_flags(parser, HostLoopConfig())
    return parser


def add_collection_flags(parser: argparse.ArgumentParser) -> None:
    """--noise_color, --action_repeat and --updates_per_step: the host loop's ways of
    collecting and how much it learns from each decision."""
    parser.add_argument(
        "--noise_color",
        type=cli.finite_float,
        default=HostLoopConfig().noise_color,
        help="exploration noise colored as 1/f^beta over each episode, beta this value: "
        "0 white (the published algorithms), 1 pink, 2 red; the noise scale is unchanged",
    )
    parser.add_argument(
        "--action_repeat",
        type=int,
        default=HostLoopConfig().action_repeat,
        metavar="K",
        help="hold each decision for K frames, rewards summed (the field's DM Control "
        "protocol: 2); steps, evaluations and checkpoints still count frames, so K = 2 makes "
        "half the updates per frame",
    )
    parser.add_argument(
        "--updates_per_step",
        type=int,
        default=HostLoopConfig().updates_per_step,
        metavar="U",
        help="gradient updates per decision after the warm-up (the update-to-data ratio); "
        "with --action_repeat 2, U = 2 makes as many updates per frame as no repeat",
    )
    parser.add_argument(
        "--population_loop",
        choices=POPULATION_LOOPS,
        default=HostLoopConfig().population_loop,
        help="how the agents of a population (--num_seeds, sweeps) update: vmap (one "
        "batched program), map (one agent after another, same program) or auto (map for "
        "BatchRenorm networks, --crossq, on a CPU, where it costs 3.1x one agent against "
        "vmap's 4.8x at 3 agents; else vmap)",
    )


class DMControlBackend:
    """The suite task --domain_name and --task_name name, or `custom`: a factory handed to
    `jax_rl.train` (`jax_rl.envs.custom`), which then makes every environment and names
    the task."""

    kind = "dm_control"
    run_prefix = ""
    loop_config_class = HostLoopConfig

    def __init__(self, custom: CustomEnv | None = None) -> None:
        self.custom = custom

    def task(self, args: argparse.Namespace) -> str:
        if self.custom is not None:
            return self.custom.name
        return f"{args.domain_name}-{args.task_name}"

    def env_fields(self, args: argparse.Namespace) -> dict[str, Any]:
        if self.custom is not None:
            return {"env": self.custom.name, "custom_env": self.custom.record()}
        return {"domain_name": args.domain_name, "task_name": args.task_name}

    def make_env(
        self, args: argparse.Namespace, seed: int, render_size: tuple[int, int] | None = None
    ) -> DMControlEnv:
        """One environment (`check` has passed), seeded with `seed`."""
        from jax_rl.envs.dm_control import DMControlEnv

        if self.custom is None:
            return DMControlEnv(args.domain_name, args.task_name, seed, render_size)
        return DMControlEnv.of(self.custom.make(), self.custom.name, seed, render_size)

    def loop_fields(self, args: argparse.Namespace) -> dict[str, Any]:
        return {
            "noise_color": args.noise_color,
            "action_repeat": args.action_repeat,
            "updates_per_step": args.updates_per_step,
            "population_loop": args.population_loop,
        }

    def check(self, args: argparse.Namespace) -> None:
        from jax_rl.envs.dm_control import check_task
        from jax_rl.envs.repeat import check_action_repeat

        if self.custom is None:
            check_task(args.domain_name, args.task_name)
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
    return driver.main(argv, build_parser(), DMControlBackend())


if __name__ == "__main__":
    sys.exit(main())
