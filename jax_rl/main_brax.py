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
import dataclasses
import sys
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script: put the project root, not jax_rl/, first on the path.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from jax_rl import cli  # noqa: E402
from jax_rl.loops.device import DeviceLoopConfig  # noqa: E402

DEFAULT_ENV = "halfcheetah"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    defaults = DeviceLoopConfig()
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
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
    cli.add_population_flag(parser)
    cli.add_run_flags(parser, defaults)
    cli.add_policy_flags(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    algo, algo_config, sweep = cli.build_algo_config(args)
    loop_config = cli.build_loop_config(
        DeviceLoopConfig,
        args,
        num_envs=args.num_envs,
        updates_per_step=args.updates_per_step,
        episode_length=args.episode_length,
    )
    agents = cli.population_of(args, sweep)

    # Imported late: Brax and JAX take seconds to load, --help should not.
    import jax

    from jax_rl.envs import UnknownEnvironmentError
    from jax_rl.envs.brax import BraxEnv, check_environment
    from jax_rl.logger import PopulationLogger
    from jax_rl.loops import device
    from jax_rl.replay import ReplaySpec, ReplayTooLargeError, check_fits

    try:
        check_environment(args.env, args.backend)
    except UnknownEnvironmentError as e:
        cli.fail(str(e))
    env = BraxEnv(args.env, args.backend, loop_config.episode_length)
    try:
        # Every agent has a buffer of its own.
        check_fits(ReplaySpec(loop_config.capacity * len(agents), env.obs_size, env.action_size))
    except ReplayTooLargeError as e:
        cli.fail(f"{len(agents)} agents: {e}" if len(agents) > 1 else str(e))

    name = f"brax-{args.policy}-{args.env}-seed{args.seed}"
    if len(agents) > 1:
        name = f"brax-{args.policy}-{args.env}-{len(agents)}agents-seed{args.seed}"
    save_dir = cli.save_dir_of(args, name)
    identity = cli.run_identity(
        args,
        loop_config,
        algo_config,
        env=args.env,
        backend=args.backend,
        num_seeds=args.num_seeds,
        sweep=sweep,
    )
    control = cli.run_control(args, save_dir, identity)
    total = loop_config.total_steps
    logger = PopulationLogger.create(
        save_dir,
        cli.agent_dirs(save_dir, agents, args.policy),
        total,
        progress=not args.no_progress,
    )
    configs = cli.agent_configs(algo_config, agents)
    run_config = {
        "policy": args.policy,
        "env": args.env,
        "backend": args.backend,
        "device": str(jax.devices()[0]),
        "num_devices": len(jax.local_devices()),
        "loop": dataclasses.asdict(loop_config),
        "algo": {f.name: getattr(algo_config, f.name) for f in dataclasses.fields(algo_config)},
    }
    cli.write_configs(logger, run_config, agents, configs, sweep, args.policy)
    ratio = loop_config.updates_per_step * loop_config.batch_size / loop_config.num_envs
    who = cli.describe_population(agents, sweep, name)
    logger.message(
        f"training {who} on {jax.devices()[0].platform}: {total:,} environment steps each, "
        f"{loop_config.num_envs} envs x {loop_config.updates_per_step} updates per iteration "
        f"(replay ratio {ratio:g}); "
        f"writing to {save_dir}"
    )
    seeds = [a.seed for a in agents]
    try:
        result = cli.guarded(
            lambda: device.train_population(algo, configs, seeds, env, loop_config, logger, control)
        )
        random_keys = jax.numpy.stack([jax.random.key(seed + 1) for seed in seeds])
        random_returns = jax.device_get(
            result.pipeline.evaluate(result.carry.agent, random_keys, jax.numpy.bool_(True))
        )
    finally:
        logger.close()
    finals = [rows[-1] for rows in result.evaluations]
    per_agent = [
        {
            "uniform_random_return_mean": float(random_returns[i].mean()),
            "env_steps": total,
            "updates": int(result.carry.updates),
            "wall_time": logger.wall_time,
        }
        for i in range(len(agents))
    ]
    table = cli.write_summaries(
        save_dir,
        logger,
        agents,
        args.policy,
        f"{args.policy} on {args.env}: final eval return at {total:,} environment steps",
        finals,
        per_agent,
        {
            "uniform_random_return_mean": float(random_returns.mean()),
            "env_steps_per_agent": total,
            "wall_time": logger.wall_time,
        },
    )
    if table is None:
        print(
            f"final eval return {finals[0]['return_mean']:.1f} +- {finals[0]['return_std']:.1f} "
            f"(uniform random policy: {float(random_returns[0].mean()):.1f}) at "
            f"{total:,} environment steps ({logger.wall_time:.0f} s); logs in {save_dir}"
        )
        return 0
    print(table, end="")
    print(
        f"{len(agents)} agents, {total:,} environment steps each, in {logger.wall_time:.0f} s "
        f"(uniform random policy: {float(random_returns.mean()):.1f}); logs in {save_dir}, "
        f"curves: python -m jax_rl.plot {save_dir} --out {save_dir / 'curves.png'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
