"""A population bigger than one machine: sub-populations as Ray tasks (`--engine ray`).

    python jax_rl/main_dm_control.py --policy SAC --num_seeds 8 --critic_lr 3e-4,1e-3 \\
        --engine ray --agents_per_worker 4 --save_dir runs/sweep

The agents are those one run would train (`population.expand`: the seeds and swept
values, setting-major), split into consecutive sub-populations of `--agents_per_worker`
agents. Each is a Ray task (`jax_rl.run.cluster`) that trains its agents as one vmapped
program, as a run of its own would (the driver's `run_part`, which the driver hands in
with the settings: this module never imports the driver), and the driver writes one
ranking over all agents when the last has finished.

Under the run's folder: each agent's folder, as one run writes it; per sub-population
`parts/<name>/` (its checkpoints, config.json, summary.json and its own ranking) and
`parts/<name>.log` (its output); `parts/ray-events.jsonl` (the progress reports); and,
at the end, the run's config.json (every agent), summary.json and ranking.md.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jax_rl.core.population import AgentSpec
from jax_rl.io import outputs
from jax_rl.run import cli, cluster, resuming

# The driver's settings of a run (`driver.Settings`) and its entry point's backend
# (`driver.Backend`): the driver is the floor above, so they are only named here.
Settings = Any
Backend = Any
# driver.run_part(build_parser, backend, argv, indices, top, part_dir, agent_dirs, say) -> exit
# code: resolve the run's settings in a worker and train the agents `indices`.
RunPart = Callable[..., int]


@dataclasses.dataclass(frozen=True)
class EntryPoint:
    """An entry point by name, as a worker imports it: its module and Backend class."""

    module: str  # "jax_rl.main_dm_control"
    backend: str  # "DMControlBackend"

    @classmethod
    def of(cls, backend: Backend) -> EntryPoint:
        module = type(backend).__module__
        if module == "__main__":  # `python jax_rl/main_*.py`: the module by its file's name
            module = f"jax_rl.{Path(sys.modules['__main__'].__file__ or '').stem}"
        return cls(module, type(backend).__name__)


@dataclasses.dataclass(frozen=True)
class PartResult:
    """What a sub-population's Ray task hands back."""

    code: int  # the run's exit code
    config: dict[str, Any]  # its config.json
    summaries: list[dict[str, Any]]  # each agent's summary.json, in the part's order
    overall: dict[str, Any]  # its summary.json's fields other than agents and ranking


def split(agents: Sequence[AgentSpec], size: int) -> list[list[AgentSpec]]:
    """Consecutive sub-populations of `size` agents (the last may be smaller)."""
    return [list(agents[i : i + size]) for i in range(0, len(agents), size)]


def part_name(agents: Sequence[AgentSpec]) -> str:
    """A sub-population's folder name, by the indices of its agents: `agents4-7`."""
    first, last = agents[0].index, agents[-1].index
    return f"agent{first}" if first == last else f"agents{first}-{last}"


def train_on_ray(
    s: Settings, backend: Backend, argv: Sequence[str], name: str, run_part: RunPart
) -> int:
    """The run as Ray tasks, one per sub-population, each trained by `run_part` in its
    worker; the exit code (1 if any failed)."""
    args, agents, policy = s.args, s.agents, s.args.policy
    top = check_folder(args, name)
    cluster.connect(args.address)
    from jax_rl.loops.device import DeviceLoopConfig

    gpus = cluster.gpus_per_job(isinstance(s.loop_config, DeviceLoopConfig))
    per_worker = args.agents_per_worker or 1
    parts = split(agents, per_worker)
    entry = EntryPoint.of(backend)
    # The workers' flags: the same run, in its absolute folder (they start elsewhere), its
    # output a log (no progress bar).
    worker_argv = [*argv, "--save_dir", str(top), "--no_progress"]
    worker_argv += ["--resume", str(top)] if args.resume else []
    submissions = []
    for i, part in enumerate(parts, 1):
        key = part_name(part)
        job = cluster.Job(
            key=key,
            label=f"[{i}/{len(parts)}] {key}",
            watch=top / part[0].folder(policy),
            log=top / "parts" / f"{key}.log",
            total_steps=s.loop_config.total_steps,
            gpus=gpus,
            kill_at_step=cluster.kill_at_step_of(key),
        )
        payload = (entry, worker_argv, [a.index for a in part], top, run_part)
        submissions.append(cluster.Submission(job, train_part_in_worker, payload))
    print(
        f"jax_rl: {outputs.describe_population(agents, s.sweep, name)} on {backend.kind} {s.task}; "
        f"settings: {s.resolution()}; {len(parts)} Ray tasks of up to {per_worker} agents, "
        f"writing to {top}",
        file=sys.stderr,
        flush=True,
    )
    start = time.perf_counter()
    results: dict[str, PartResult] = {}
    failed = cluster.run_jobs(submissions, _finish(results), top / "parts" / "ray-events.jsonl")
    if failed:
        names = ", ".join(job.key for job in failed)
        print(f"error: failed: {names}; run the same command with --resume {top}", file=sys.stderr)
        return 1
    ordered = [results[part_name(part)] for part in parts]
    table = write_run(s, backend, top, ordered, parts, time.perf_counter() - start)
    print(table, end="")
    print(
        f"{len(agents)} agents, {s.loop_config.total_steps:,} environment steps each, in "
        f"{len(parts)} Ray tasks; logs in {top}, curves: python -m jax_rl.watch.plot {top} "
        f"--out {top / 'curves.png'}"
    )
    return 0


def check_folder(args: Any, name: str) -> Path:
    """The run's folder (absolute): refuses to start over an earlier run's checkpoints, or
    to continue (--resume) a folder without sub-populations (exit 2)."""
    top = resuming.save_dir_of(args, name).absolute()
    parts = top / "parts"
    held = [p.parent for p in [top / "checkpoints", *parts.glob("*/checkpoints")] if p.is_dir()]
    if args.resume is None and held:
        cli.fail(
            f"{top} holds the checkpoints of an earlier run ({held[0]}); pass --resume {top} "
            "to continue it, or choose another --save_dir"
        )
    if args.resume is not None and not parts.is_dir():
        cli.fail(f"--resume {args.resume}: no sub-populations (parts/) of an --engine ray run")
    return top


def _finish(results: dict[str, PartResult]) -> Callable[[cluster.Job, PartResult], bool]:
    """The driver's handling of a finished part: keep its result, print its line."""

    def finish(job: cluster.Job, result: PartResult) -> bool:
        if result.code != 0:
            print(f"{job.label}: exit code {result.code}; see {job.log}", flush=True)
            return False
        results[job.key] = result
        finals = [_final(summary) for summary in result.summaries]
        print(
            f"{job.label}: done, final returns {' / '.join(f'{r:.1f}' for r in finals)}",
            flush=True,
        )
        return True

    return finish


def _final(summary: dict[str, Any]) -> float:
    value = summary.get("final_return_mean")
    return math.nan if value is None else float(value)  # a diverged agent's null


def write_run(
    s: Settings,
    backend: Backend,
    top: Path,
    results: Sequence[PartResult],
    parts: Sequence[Sequence[AgentSpec]],
    wall_time: float,
) -> str:
    """The run's config.json (every agent), summary.json and ranking.md, as one run of all
    the agents writes them; returns the ranking table."""
    policy, total = s.args.policy, s.loop_config.total_steps
    config = {k: v for k, v in results[0].config.items() if k not in ("agents", "sweep")}
    config |= {
        "sweep": s.sweep,
        "agents": outputs.agent_records(s.agents, policy),
        "engine": {"name": "ray", "parts": [part_name(p) for p in parts]},
    }
    (top / "config.json").write_text(json.dumps(config, indent=2, default=str))
    finals = [_final(summary) for result in results for summary in result.summaries]
    overall = {
        "env_steps_per_agent": total,
        "wall_time": wall_time,
        **_mean_over_agents(results),
    }
    title = f"{policy} on {backend.kind} {s.task}: final eval return at {total:,} environment steps"
    return outputs.write_ranking(top, s.agents, policy, title, finals, overall)


def _mean_over_agents(results: Sequence[PartResult]) -> dict[str, float]:
    """The parts' population-wide figures (e.g. the uniform random policy's return), as
    means over all agents (each part's figure weighted by its number of agents)."""
    sizes = [len(r.summaries) for r in results]
    keys = set.intersection(*(set(r.overall) for r in results)) - {"env_steps_per_agent"}
    out = {}
    for key in sorted(keys):
        values = [r.overall[key] for r in results]
        if key != "wall_time" and all(isinstance(v, int | float) for v in values):
            out[key] = sum(v * n for v, n in zip(values, sizes, strict=True)) / sum(sizes)
    return out


def train_part_in_worker(
    job: cluster.Job,
    board: Any,
    entry: EntryPoint,
    argv: Sequence[str],
    indices: Sequence[int],
    top: Path,
    run_part: RunPart,
) -> PartResult:
    """A sub-population as a Ray task: the agents `indices` of the run `argv` describes,
    trained in this worker process by `run_part` (a lost worker is a lost run, which Ray
    retries and which continues from the part's checkpoint)."""

    def work(say: Callable[[str], None]) -> PartResult:
        import importlib

        from jax_rl.io import quiet

        quiet.install()
        module = importlib.import_module(entry.module)
        backend = getattr(module, entry.backend)()
        part_dir = top / "parts" / job.key
        agent_dirs: list[Path] = []

        def run() -> int:
            def tell(text: str) -> None:
                say(f"{text} (log: {job.log})")

            args = (module.build_parser, backend, argv, indices, top, part_dir, agent_dirs, tell)
            return run_part(*args)

        code = cluster.exit_code(run)
        return read_part(part_dir, agent_dirs) if code == 0 else PartResult(code, {}, [], {})

    return cluster.run_job(job, board, work)


def read_part(part_dir: Path, agent_dirs: Sequence[Path]) -> PartResult:
    """A finished part's config, its agents' summaries and its population-wide figures
    (those of its summary.json; a one-agent part has only its agent's)."""
    config = json.loads((part_dir / "config.json").read_text())
    summaries = [json.loads((d / "summary.json").read_text()) for d in agent_dirs]
    own = part_dir / "summary.json"
    overall = json.loads(own.read_text()) if own.exists() else dict(summaries[0])
    skipped = {"agents", "ranking", "final_return_mean", "final_return_std"}
    return PartResult(0, config, summaries, {k: v for k, v in overall.items() if k not in skipped})
