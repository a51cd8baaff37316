"""Train TD3 or SAC on a dm_control task with the host loop.

    python jax_rl/main_dm_control.py --policy SAC --domain_name cartpole --task_name swingup

Writes evaluations.csv, train.csv, config.json and the final agent under
--save_dir (default runs/<policy>-<domain>-<task>-seed<seed>).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script: put the project root, not jax_rl/, first on the path.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from jax_rl import cli  # noqa: E402
from jax_rl.loops.host import HostLoopConfig  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    defaults = HostLoopConfig()
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--domain_name", default="cartpole", help="dm_control domain")
    parser.add_argument("--task_name", default="swingup", help="dm_control task of that domain")
    cli.add_run_flags(parser, defaults)
    cli.add_policy_flags(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    algo, algo_config, _ = cli.build_algo_config(args)
    loop_config = cli.build_loop_config(HostLoopConfig, args)

    # Imported late: dm_control and JAX take seconds to load, --help should not.
    from jax_rl.envs import UnknownEnvironmentError
    from jax_rl.envs.dm_control import DMControlEnv, check_task
    from jax_rl.logger import RunLogger
    from jax_rl.loops import host
    from jax_rl.replay import ReplaySpec, ReplayTooLargeError, check_fits

    try:
        check_task(args.domain_name, args.task_name)
    except UnknownEnvironmentError as e:
        cli.fail(str(e))
    env = DMControlEnv(args.domain_name, args.task_name, seed=args.seed)
    eval_env = DMControlEnv(args.domain_name, args.task_name, seed=args.seed + 10_000)
    spec = ReplaySpec(loop_config.capacity, env.obs_size, env.action_size)
    try:
        check_fits(spec)
    except ReplayTooLargeError as e:
        cli.fail(str(e))

    name = f"{args.policy}-{args.domain_name}-{args.task_name}-seed{args.seed}"
    save_dir = cli.save_dir_of(args, name)
    identity = cli.run_identity(
        args, loop_config, algo_config, domain_name=args.domain_name, task_name=args.task_name
    )
    control = cli.run_control(args, save_dir, identity)
    logger = RunLogger(save_dir, loop_config.max_timesteps, progress=not args.no_progress)
    logger.write_config(
        {
            "policy": args.policy,
            "domain_name": args.domain_name,
            "task_name": args.task_name,
            "loop": dataclasses.asdict(loop_config),
            "algo": {f.name: getattr(algo_config, f.name) for f in dataclasses.fields(algo_config)},
        }
    )
    logger.message(f"training {name}; writing to {save_dir}")
    try:
        result = cli.guarded(
            lambda: host.train(algo, algo_config, env, eval_env, loop_config, logger, control)
        )
    finally:
        logger.close()
    final = result.evaluations[-1]
    print(
        f"final eval return {final['return_mean']:.1f} +- {final['return_std']:.1f} "
        f"at step {final['step']} ({logger.wall_time:.0f} s); logs in {save_dir}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
