"""Evaluate a saved agent: the return of its deterministic policy over N fresh episodes.

    python -m jax_rl.watch.evaluate runs/SAC-walker-walk-seed0 --episodes 20
    python -m jax_rl.watch.evaluate runs/brax-SAC-halfcheetah-seed0 --checkpoint 50000
    python -m jax_rl.watch.evaluate runs/SAC-cartpole-swingup-3agents-seed0

Loads the run's agent (the final one, or that of checkpoint --checkpoint) and
its task from config.json, and plays --episodes episodes exactly as the
training evaluates (the same deterministic action, the same rollout), on
seeds the training never used. Prints the mean, standard deviation, minimum
and maximum and writes them, with every episode's return, as evaluation.json
(evaluation-step<STEP>.json for a checkpoint) in the agent's folder. A
population's run evaluates every agent, or --agent K alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jax_rl.io import outputs
from jax_rl.run import cli
from jax_rl.run.driver import OneLineErrorParser

if TYPE_CHECKING:
    from jax_rl.run.saved import SavedAgent, SavedRun


def build_parser() -> argparse.ArgumentParser:
    from jax_rl.run.saved import add_selection_flags

    parser = OneLineErrorParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=cli.HelpFormatter,
    )
    add_selection_flags(parser)
    parser.add_argument("--episodes", type=int, default=10, help="episodes to evaluate on")
    return parser


def statistics(returns: Sequence[float]) -> dict[str, float]:
    """Mean, (population) standard deviation, minimum and maximum."""
    mean = sum(returns) / len(returns)
    std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
    return {"mean": mean, "std": std, "min": min(returns), "max": max(returns)}


def result_path(agent_dir: Path, checkpoint: int | None) -> Path:
    name = "evaluation.json" if checkpoint is None else f"evaluation-step{checkpoint}.json"
    return agent_dir / name


def main(argv: Sequence[str] | None = None) -> int:
    from jax_rl.io import quiet

    quiet.install()
    args = build_parser().parse_args(argv)
    if args.episodes <= 0:
        cli.fail(f"--episodes must be a positive integer, got {args.episodes}")
    from jax_rl.run.saved import RunFolderError, open_selection

    try:
        run, agents = open_selection(args)
    except RunFolderError as e:
        cli.fail(str(e))
    for agent in agents:
        evaluate_agent(run, agent, args)
    return 0


def evaluate_agent(run: SavedRun, agent: SavedAgent, args: argparse.Namespace) -> dict[str, Any]:
    """Play the agent's episodes, write its evaluation JSON, print one line; the result."""
    from jax_rl.run import play
    from jax_rl.run.saved import episode_seed

    seed = episode_seed(run, agent, args.seed)
    env = run.open_env(seed, None)
    state = run.load_agent(
        agent,
        env.obs_size,
        env.action_size,
        args.checkpoint,
        actor_obs_size=getattr(env, "actor_obs_size", 0),
    )
    player = play.make_player(run.kind, run.algo, env, run.loop_config, seed)
    returns = [episode.episode_return for episode in player.play(state, args.episodes)]
    stats = statistics(returns)
    result = {
        "run": str(run.directory),
        "agent": agent.name,
        "policy": run.config["policy"],
        "env_backend": run.kind,
        "task": run.task,
        "checkpoint": args.checkpoint,  # None: the final agent
        "seed": seed,
        "episodes": args.episodes,
        "return_mean": stats["mean"],
        "return_std": stats["std"],
        "return_min": stats["min"],
        "return_max": stats["max"],
        "returns": returns,
    }
    path = result_path(agent.directory, args.checkpoint)
    path.write_text(json.dumps(outputs.json_safe(result), indent=2))
    which = "final agent" if args.checkpoint is None else f"checkpoint {args.checkpoint}"
    print(
        f"{agent.name} ({which}): return {stats['mean']:.1f} +- {stats['std']:.1f} "
        f"[min {stats['min']:.1f}, max {stats['max']:.1f}] over {args.episodes} episodes "
        f"(seed {seed}); written to {path}"
    )
    return result


if __name__ == "__main__":
    sys.exit(main())
