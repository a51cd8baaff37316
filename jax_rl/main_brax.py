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
import json
import math
import sys
from pathlib import Path
from typing import Any

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
    parser.add_argument(
        "--num_seeds",
        type=int,
        default=1,
        help="train this many agents (seeds --seed, --seed+1, ...) together in one vmapped "
        "program; crossed with any swept hyperparameter",
    )
    cli.add_run_flags(parser, defaults)
    cli.add_policy_flags(parser, sweeps=True)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    algo, algo_config, sweep = cli.build_algo_config(args, allow_sweep=True)
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

    from jax_rl import population
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
    agent_dirs = (
        [save_dir] if len(agents) == 1 else [save_dir / a.folder(args.policy) for a in agents]
    )
    logger = PopulationLogger.create(save_dir, agent_dirs, total, progress=not args.no_progress)
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
    if len(agents) > 1:
        run_config["sweep"] = sweep
        run_config["agents"] = [
            {"index": a.index, "seed": a.seed, "folder": a.folder(args.policy), **dict(a.values)}
            for a in agents
        ]
    logger.top.write_config(run_config)
    for agent, agent_logger, agent_config in zip(agents, logger.agents, configs, strict=True):
        if agent_logger is not logger.top:
            agent_logger.write_config(
                {**run_config, "seed": agent.seed, "algo": dataclasses.asdict(agent_config)}
            )
    ratio = loop_config.updates_per_step * loop_config.batch_size / loop_config.num_envs
    who = name if len(agents) == 1 else f"{len(agents)} agents ({_describe(agents, sweep)})"
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
    for i, agent_logger in enumerate(logger.agents):
        summary = {
            "final_return_mean": finals[i]["return_mean"],
            "final_return_std": finals[i]["return_std"],
            "uniform_random_return_mean": float(random_returns[i].mean()),
            "env_steps": total,
            "updates": int(result.carry.updates),
            "wall_time": logger.wall_time,
        }
        (agent_logger.save_dir / "summary.json").write_text(
            json.dumps(_json_safe(summary), indent=2)
        )
    if len(agents) == 1:
        print(
            f"final eval return {finals[0]['return_mean']:.1f} +- {finals[0]['return_std']:.1f} "
            f"(uniform random policy: {float(random_returns[0].mean()):.1f}) at "
            f"{total:,} environment steps ({logger.wall_time:.0f} s); logs in {save_dir}"
        )
        return 0
    ranking = population.rank_settings(agents, [f["return_mean"] for f in finals])
    table = population.ranking_markdown(ranking, args.policy)
    (save_dir / "ranking.md").write_text(
        f"# {args.policy} on {args.env}: final eval return at {total:,} environment steps\n\n"
        + table
    )
    (save_dir / "summary.json").write_text(
        json.dumps(
            _json_safe(
                {
                    "agents": [
                        {
                            "folder": a.folder(args.policy),
                            "seed": a.seed,
                            **dict(a.values),
                            "final_return_mean": f["return_mean"],
                        }
                        for a, f in zip(agents, finals, strict=True)
                    ],
                    "ranking": ranking,
                    "uniform_random_return_mean": float(random_returns.mean()),
                    "env_steps_per_agent": total,
                    "wall_time": logger.wall_time,
                }
            ),
            indent=2,
        )
    )
    print(table, end="")
    print(
        f"{len(agents)} agents, {total:,} environment steps each, in {logger.wall_time:.0f} s "
        f"(uniform random policy: {float(random_returns.mean()):.1f}); logs in {save_dir}, "
        f"curves: python -m jax_rl.plot {save_dir} --out {save_dir / 'curves.png'}"
    )
    return 0


def _json_safe(value: Any) -> Any:
    """`value` with NaN/inf floats (a diverged agent's returns) as null: strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def _describe(agents: list, sweep: dict[str, list[float]]) -> str:
    seeds = sorted({a.seed for a in agents})
    parts = [f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}"]
    parts += [f"{k} in {{{', '.join(f'{v:g}' for v in vs)}}}" for k, vs in sorted(sweep.items())]
    return "; ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
