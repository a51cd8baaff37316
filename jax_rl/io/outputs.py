"""What a population run writes, on either loop: each agent's folder and config.json, the
start-up line's description of who trains, summary.json per agent and, for a population,
the run's summary.json and ranking.md (settings ranked by final return)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def agent_dirs(save_dir: Path, agents: Sequence[Any], policy: str) -> list[Path]:
    """Each agent's log folder: the run's own for a single agent, else one subfolder each."""
    if len(agents) == 1:
        return [save_dir]
    return [save_dir / agent.folder(policy) for agent in agents]


def write_configs(
    logger: Any,
    run_config: dict[str, Any],
    agents: Sequence[Any],
    configs: Sequence[Any],
    sweep: dict[str, list[float]],
    policy: str,
) -> None:
    """config.json of the run (with its agent list) and of each agent (its seed and values)."""
    if len(agents) > 1:
        run_config = {**run_config, "sweep": sweep, "agents": agent_records(agents, policy)}
    logger.top.write_config(run_config)
    for agent, agent_logger, agent_config in zip(agents, logger.agents, configs, strict=True):
        if agent_logger is not logger.top:
            agent_logger.write_config(
                {**run_config, "seed": agent.seed, "algo": dataclasses.asdict(agent_config)}
            )


def agent_records(agents: Sequence[Any], policy: str) -> list[dict[str, Any]]:
    """The agent list of a population's config.json: index, seed, folder, swept values."""
    return [
        {"index": a.index, "seed": a.seed, "folder": a.folder(policy), **dict(a.values)}
        for a in agents
    ]


def describe_population(agents: Sequence[Any], sweep: dict[str, list[float]], name: str) -> str:
    """Who trains, for the start-up line: the run's `name` for one agent, else
    `5 agents (seeds 0-4; tau in {0.005, 0.01})`."""
    if len(agents) == 1:
        return name
    seeds = sorted({a.seed for a in agents})
    parts = [f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}"]
    parts += [f"{k} in {{{', '.join(f'{v:g}' for v in vs)}}}" for k, vs in sorted(sweep.items())]
    return f"{len(agents)} agents ({'; '.join(parts)})"


def write_summaries(
    save_dir: Path,
    logger: Any,
    agents: Sequence[Any],
    policy: str,
    title: str,
    finals: Sequence[dict[str, float]],
    per_agent: Sequence[dict[str, Any]],
    overall: dict[str, Any],
) -> str | None:
    """summary.json per agent (its final evaluation and `per_agent[i]`); for a population
    also the run's summary.json (`overall` added) and ranking.md (settings ranked by final
    return). Returns the ranking table, None for one agent."""
    for final, extra, agent_logger in zip(finals, per_agent, logger.agents, strict=True):
        summary = {
            "final_return_mean": final["return_mean"],
            "final_return_std": final["return_std"],
            **extra,
        }
        (agent_logger.save_dir / "summary.json").write_text(
            json.dumps(json_safe(summary), indent=2)
        )
    if len(agents) == 1:
        return None
    return write_ranking(
        save_dir, agents, policy, title, [f["return_mean"] for f in finals], overall
    )


def write_ranking(
    save_dir: Path,
    agents: Sequence[Any],
    policy: str,
    title: str,
    finals: Sequence[float],
    overall: dict[str, Any],
) -> str:
    """A population's ranking.md (settings ranked by the agents' final returns `finals`)
    and summary.json (`overall` added); returns the ranking table."""
    from jax_rl.core import population

    ranking = population.rank_settings(agents, finals)
    table = population.ranking_markdown(ranking, policy)
    (save_dir / "ranking.md").write_text(f"# {title}\n\n{table}")
    rows = [
        {"folder": a.folder(policy), "seed": a.seed, **dict(a.values), "final_return_mean": f}
        for a, f in zip(agents, finals, strict=True)
    ]
    (save_dir / "summary.json").write_text(
        json.dumps(json_safe({"agents": rows, "ranking": ranking, **overall}), indent=2)
    )
    return table


def json_safe(value: Any) -> Any:
    """`value` with NaN/inf floats (a diverged agent's returns) as null: strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
