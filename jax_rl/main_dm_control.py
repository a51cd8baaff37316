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
    parser.add_argument(
        "--noise_color",
        type=float,
        default=defaults.noise_color,
        help="exploration noise colored as 1/f^beta over each episode, beta this value: "
        "0 white (the published algorithms), 1 pink, 2 red; the noise scale is unchanged",
    )
    cli.add_population_flag(parser)
    cli.add_run_flags(parser, defaults)
    cli.add_policy_flags(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    algo, algo_config, sweep = cli.build_algo_config(args)
    loop_config = cli.build_loop_config(HostLoopConfig, args, noise_color=args.noise_color)
    agents = cli.population_of(args, sweep)

    # Imported late: dm_control and JAX take seconds to load, --help should not.
    from jax_rl.envs import UnknownEnvironmentError
    from jax_rl.envs.dm_control import DMControlEnv, check_task
    from jax_rl.logger import PopulationLogger
    from jax_rl.loops import host
    from jax_rl.replay import ReplaySpec, ReplayTooLargeError, check_fits

    try:
        check_task(args.domain_name, args.task_name)
    except UnknownEnvironmentError as e:
        cli.fail(str(e))
    # Agent i's environments are seeded as a run of its own with its seed would seed them.
    envs = [DMControlEnv(args.domain_name, args.task_name, seed=a.seed) for a in agents]
    eval_envs = [
        DMControlEnv(args.domain_name, args.task_name, seed=a.seed + 10_000) for a in agents
    ]
    env = envs[0]
    try:
        # Every agent has a buffer of its own.
        check_fits(ReplaySpec(loop_config.capacity * len(agents), env.obs_size, env.action_size))
    except ReplayTooLargeError as e:
        cli.fail(f"{len(agents)} agents: {e}" if len(agents) > 1 else str(e))

    name = f"{args.policy}-{args.domain_name}-{args.task_name}-seed{args.seed}"
    if len(agents) > 1:
        name = (
            f"{args.policy}-{args.domain_name}-{args.task_name}-{len(agents)}agents-seed{args.seed}"
        )
    save_dir = cli.save_dir_of(args, name)
    identity = cli.run_identity(
        args,
        loop_config,
        algo_config,
        domain_name=args.domain_name,
        task_name=args.task_name,
        num_seeds=args.num_seeds,
        sweep=sweep,
    )
    control = cli.run_control(args, save_dir, identity)
    total = loop_config.max_timesteps
    logger = PopulationLogger.create(
        save_dir,
        cli.agent_dirs(save_dir, agents, args.policy),
        total,
        progress=not args.no_progress,
    )
    configs = cli.agent_configs(algo_config, agents)
    run_config = {
        "policy": args.policy,
        "domain_name": args.domain_name,
        "task_name": args.task_name,
        "loop": dataclasses.asdict(loop_config),
        "algo": {f.name: getattr(algo_config, f.name) for f in dataclasses.fields(algo_config)},
    }
    cli.write_configs(logger, run_config, agents, configs, sweep, args.policy)
    who = cli.describe_population(agents, sweep, name)
    logger.message(f"training {who}; writing to {save_dir}")
    seeds = [a.seed for a in agents]
    try:
        result = cli.guarded(
            lambda: host.train_population(
                algo, configs, seeds, envs, eval_envs, loop_config, logger, control
            )
        )
    finally:
        logger.close()
    finals = [rows[-1] for rows in result.evaluations]
    table = cli.write_summaries(
        save_dir,
        logger,
        agents,
        args.policy,
        f"{args.policy} on {args.domain_name}-{args.task_name}: final eval return at "
        f"{total:,} environment steps",
        finals,
        [{"env_steps": total, "wall_time": logger.wall_time}] * len(agents),
        {"env_steps_per_agent": total, "wall_time": logger.wall_time},
    )
    if table is None:
        final = finals[0]
        print(
            f"final eval return {final['return_mean']:.1f} +- {final['return_std']:.1f} "
            f"at step {final['step']} ({logger.wall_time:.0f} s); logs in {save_dir}"
        )
        return 0
    print(table, end="")
    print(
        f"{len(agents)} agents, {total:,} environment steps each, in {logger.wall_time:.0f} s; "
        f"logs in {save_dir}, curves: python -m jax_rl.plot {save_dir} "
        f"--out {save_dir / 'curves.png'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
