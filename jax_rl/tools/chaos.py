"""Faults survived, counted: a training run SIGKILLed at random moments and resumed, again
and again, must end bitwise equal to the same run left alone.

    python -m jax_rl.tools.chaos                       # make chaos: 20 kills (host), 10 (device)
    python -m jax_rl.tools.chaos --loops host --kills 3 --out /tmp/chaos   # a short one

For each loop: one uninterrupted reference run (timed: its start-up, to the first
checkpoint on disk, and its training after that); then the same command, killed with
SIGKILL (no handler runs), continued with `--resume` (or started afresh where no checkpoint
was complete yet), until it has been killed `--kills` times and then finishes. One kill in
five lands in the start-up (a moment drawn uniformly over the reference's); the others
while it trains: once the process has begun its first checkpoint, at a moment drawn
uniformly over the reference's training time left from its newest checkpoint's step.
Drawing them all over the whole wall time would put most of them in the compilation (a
device-loop run's start-up is most of a tiny run's time) and test few resumes. Checkpoints
are written every few steps, so some kills land while one is being written (counted: an
Orbax temporary folder is left behind at that moment). At the end: the final parameters
(agent.msgpack) equal the reference's byte for byte, so do the evaluations, no temporary
folder is left, and every kept checkpoint loads. Writes <out>/chaos.md and chaos.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TMP_SUFFIX = ".orbax-checkpoint-tmp"  # Orbax's folder for a checkpoint being written
# Tiny runs that checkpoint often (every checkpoint holds the replay buffer, so writing one
# takes a noticeable part of the time), one per loop.
RUNS = {
    "host": (
        "main_dm_control.py",
        [
            "--policy", "SAC", "--max_timesteps", "3000", "--start_timesteps", "200",
            "--batch_size", "64", "--hidden_sizes", "64,64", "--eval_freq", "1000",
            "--eval_episodes", "1", "--log_freq", "500", "--checkpoint_every", "100",
        ],
    ),
    "device": (
        "main_brax.py",
        [
            "--policy", "TD3", "--env", "inverted_pendulum", "--max_timesteps", "8192",
            "--num_envs", "16", "--updates_per_step", "4", "--start_timesteps", "512",
            "--batch_size", "64", "--hidden_sizes", "32,32", "--eval_freq", "2048",
            "--eval_episodes", "2", "--episode_length", "100", "--log_freq", "1024",
            "--checkpoint_every", "256",
        ],
    ),
}  # fmt: skip
DEFAULT_KILLS = {"host": 20, "device": 10}
START_UP_SHARE = 0.2  # of the kills, drawn over the start-up rather than the training


def run_command(loop: str, *extra: str) -> list[str]:
    script, flags = RUNS[loop]
    return [sys.executable, str(ROOT / "jax_rl" / script), *flags, "--no_progress", *extra]


def evaluations(folder: Path) -> list[tuple[str, str, str]]:
    with (folder / "evaluations.csv").open() as f:
        return [(r["step"], r["return_mean"], r["return_std"]) for r in csv.DictReader(f)]


def leftovers(folder: Path) -> list[Path]:
    """Temporary folders of checkpoints that were being written."""
    while True:
        try:
            return sorted(p for p in folder.rglob(f"*{TMP_SUFFIX}*"))
        except FileNotFoundError:  # a running process removed a folder as it was listed
            continue


def checkpoint_steps(folder: Path) -> set[int]:
    """The steps of the complete checkpoints in a run folder, by listing it: cheap enough to
    poll while the run writes (a `Checkpointer` would build an Orbax manager each time)."""
    try:
        return {int(p.name) for p in (folder / "checkpoints").iterdir() if p.name.isdigit()}
    except FileNotFoundError:  # no checkpoint yet, or the folder went as it was listed
        return set()


def newest_step(folder: Path) -> int | None:
    """The newest complete checkpoint's step in a run folder, or None."""
    return max(checkpoint_steps(folder), default=None)


def until_first_checkpoint(
    process: subprocess.Popen, folder: Path, newest: int | None, poll: float = 0.05
) -> float | None:
    """Seconds until the process begins its first checkpoint (a new temporary folder, or a
    step newer than `newest`, appears in `folder`); None if it ends first. A temporary
    folder left by the previous kill does not count."""
    started, stale = time.perf_counter(), set(leftovers(folder))
    while process.poll() is None:
        if set(leftovers(folder)) - stale or (newest_step(folder) or -1) > (newest or -1):
            return time.perf_counter() - started
        time.sleep(poll)
    return None


def ends_within(process: subprocess.Popen, seconds: float) -> bool:
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def total_steps(loop: str) -> int:
    flags = RUNS[loop][1]
    return int(flags[flags.index("--max_timesteps") + 1])


def checkpoints_load(folder: Path) -> tuple[list[int], list[str]]:
    """The kept checkpoint steps and, for any that does not load, why."""
    import orbax.checkpoint as ocp

    from jax_rl.io.checkpoint import ARRAYS, Checkpointer, CheckpointError

    checkpointer = Checkpointer(folder / "checkpoints")
    steps, problems = checkpointer.steps(), []
    for step in steps:
        try:
            checkpointer.read_meta(step)
            path = (folder / "checkpoints" / str(step) / ARRAYS).absolute()
            ocp.StandardCheckpointer().restore(path)
        except (CheckpointError, Exception) as e:  # anything unreadable is a failure
            problems.append(f"step {step}: {type(e).__name__}: {e}")
    return steps, problems


def chaos(loop: str, kills: int, work: Path, seed: int, env: dict[str, str]) -> dict[str, Any]:
    """The reference run, then the killed-and-resumed one; the figures and checks."""
    import numpy as np

    rng = np.random.default_rng(seed)
    reference, run_dir = work / f"{loop}-reference", work / f"{loop}-chaos"
    started = time.perf_counter()
    process = subprocess.Popen(
        run_command(loop, "--save_dir", str(reference)), env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    start_up = until_first_checkpoint(process, reference, newest_step(reference))
    stderr = process.communicate()[1].decode()
    if process.returncode != 0:
        raise RuntimeError(f"the reference {loop} run failed:\n{stderr[-2000:]}")
    reference_seconds = time.perf_counter() - started
    start_up = reference_seconds if start_up is None else start_up
    training = reference_seconds - start_up
    steps = total_steps(loop)
    killed, during_write, in_start_up, fresh_starts, resumes, attempts = 0, 0, 0, 0, 0, 0
    seen_steps: set[int] = set()
    while True:
        newest = newest_step(run_dir)
        if newest is not None:
            extra, resumes = ["--resume", str(run_dir)], resumes + 1
        else:  # killed before its first complete checkpoint: start again from nothing
            shutil.rmtree(run_dir, ignore_errors=True)
            extra, fresh_starts = ["--save_dir", str(run_dir)], fresh_starts + 1
        attempts += 1
        process = subprocess.Popen(
            run_command(loop, *extra), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        if killed < kills:
            early = rng.random() < START_UP_SHARE
            wait: float | None
            if early:  # somewhere in the start-up: imports, compilation, the first steps
                wait = rng.uniform(0.0, 1.0) * start_up
            else:  # while it trains: the clock starts as it begins its first checkpoint
                began = until_first_checkpoint(process, run_dir, newest)
                left = training * (1 - (newest or 0) / steps)
                wait = None if began is None else rng.uniform(0.0, 1.0) * left
            if wait is not None and not ends_within(process, wait):
                process.send_signal(signal.SIGKILL)
                process.wait()
                killed += 1
                in_start_up += early
                during_write += bool(leftovers(run_dir))
                seen_steps |= checkpoint_steps(run_dir)
                continue
        stderr = process.communicate()[1].decode()
        if process.returncode != 0:
            raise RuntimeError(f"the {loop} run exited {process.returncode}:\n{stderr[-2000:]}")
        if killed >= kills:
            break
        # It finished before the drawn moment: train it again from scratch, to be killed.
        shutil.rmtree(run_dir)
    kept, problems = checkpoints_load(run_dir)
    same_agents = all(
        (run_dir / p.relative_to(reference)).read_bytes() == p.read_bytes()
        for p in reference.rglob("agent.msgpack")
    ) and any(reference.rglob("agent.msgpack"))
    same_evaluations = all(
        evaluations(run_dir / p.parent.relative_to(reference)) == evaluations(p.parent)
        for p in reference.rglob("evaluations.csv")
    )
    return {
        "loop": loop,
        "command": " ".join(run_command(loop)[1:]).replace(str(ROOT) + "/", ""),
        "kills": killed,
        "kills_while_writing_a_checkpoint": during_write,
        "kills_in_start_up": in_start_up,
        "resumes": resumes,
        "fresh_starts": fresh_starts,
        "processes_started": attempts,
        "checkpoint_steps_seen": len(seen_steps | set(kept)),
        "reference_seconds": round(reference_seconds, 1),
        "reference_start_up_seconds": round(start_up, 1),
        "chaos_seconds": round(time.perf_counter() - started - reference_seconds, 1),
        "final_agent_bitwise_equal": same_agents,
        "evaluations_equal": same_evaluations,
        "temporary_folders_left": [str(p) for p in leftovers(run_dir)],
        "kept_checkpoints": kept,
        "checkpoints_failing_to_load": problems,
    }


def passed(row: dict[str, Any]) -> bool:
    return bool(
        row["final_agent_bitwise_equal"]
        and row["evaluations_equal"]
        and not row["temporary_folders_left"]
        and not row["checkpoints_failing_to_load"]
    )


def markdown(rows: list[dict[str, Any]], machine: dict[str, Any]) -> str:
    lines = [
        "# Chaos: runs killed at random moments and resumed (`make chaos`)",
        "",
        "Each row: one tiny run SIGKILLed at random moments (one kill in five drawn over the "
        "start-up, the others over the training time left once the process has begun its "
        "first checkpoint), resumed from its newest checkpoint after every kill (or started "
        "afresh where none was complete), until it had been killed the number of times shown "
        "and then finished; checked against the same run left alone "
        "(`python -m jax_rl.tools.chaos`, jax_rl/tools/chaos.py).",
        "",
        "| loop | kills survived | of them in the start-up | of them while writing a "
        "checkpoint | resumes | fresh starts "
        "| checkpoint steps seen on disk (two kept at a time) | final parameters bitwise equal "
        "| evaluations equal "
        "| temporary folders left | checkpoints failing to load | wall |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['loop']} | {r['kills']} | {r.get('kills_in_start_up', 'n/a')} | "
            f"{r['kills_while_writing_a_checkpoint']} | "
            f"{r['resumes']} | {r['fresh_starts']} | {r['checkpoint_steps_seen']} | "
            f"{'yes' if r['final_agent_bitwise_equal'] else '**no**'} | "
            f"{'yes' if r['evaluations_equal'] else '**no**'} | "
            f"{len(r['temporary_folders_left'])} | {len(r['checkpoints_failing_to_load'])} | "
            f"{r['chaos_seconds'] / 60:.1f} min |"
        )
    lines += ["", "Commands (each with `--save_dir`, then `--resume`):", ""]
    lines += [f"- {r['loop']}: `python {r['command']}`" for r in rows]
    lines += ["", f"Machine: {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loops", default="host,device", help="comma-separated: host, device")
    parser.add_argument(
        "--kills", type=int, default=None, help="kills per loop (default: 20 host, 10 device)"
    )
    parser.add_argument("--seed", type=int, default=0, help="draws the moments of the kills")
    parser.add_argument(
        "--out",
        default=None,
        help="folder for chaos.md/.json (default docs/benchmarks at the full counts; a "
        "temporary folder with fewer kills)",
    )
    args = parser.parse_args(argv)
    loops = [loop for loop in args.loops.split(",") if loop]
    unknown = [loop for loop in loops if loop not in RUNS]
    if unknown or not loops:
        print(f"error: --loops takes host and device, got {args.loops!r}", file=sys.stderr)
        return 2
    if args.kills is not None and args.kills < 1:
        print(f"error: --kills must be a positive integer, got {args.kills}", file=sys.stderr)
        return 2
    full = args.kills is None or all(args.kills >= DEFAULT_KILLS[loop] for loop in loops)
    if args.out is None:
        from jax_rl.io.logger import scratch_folder

        args.out = "docs/benchmarks" if full else scratch_folder("chaos", "fewer kills")
    from jax_rl.tools.benchmark import machine

    cache = tempfile.mkdtemp(prefix="jax_rl-chaos-cache-")
    env = {
        **os.environ,
        "JAX_COMPILATION_CACHE_DIR": cache,  # restarts load the compiled programs
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="jax_rl-chaos-") as work:
            for loop in loops:
                kills = args.kills or DEFAULT_KILLS[loop]
                print(f"chaos: {loop} loop, {kills} kills ...", file=sys.stderr, flush=True)
                row = chaos(loop, kills, Path(work), args.seed, env)
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = machine()
    (out / "chaos.md").write_text(markdown(rows, info))
    (out / "chaos.json").write_text(json.dumps({"machine": info, "rows": rows}, indent=2))
    print(markdown(rows, info))
    return 0 if all(passed(r) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
