"""A soak: SAC on the host loop for a million steps, its resident memory and its seconds per
1000 steps sampled at regular intervals, both of which must stay flat.

    python -m jax_rl.tools.soak                                   # make soak: 1M steps (hours)
    python -m jax_rl.tools.soak --steps 20000 --every 5000        # a short one, to a scratch folder

The run is `main_dm_control.py --policy SAC` on cheetah-run in a child process, with a
replay buffer a quarter of the steps (so that it is full for the last three quarters) and
one evaluation per interval. Each time the child's train.csv passes a multiple of `--every`
steps, the soak reads the child's resident memory (VmRSS, /proc/<pid>/status) and the seconds
per 1000 steps over the interval just ended (train.csv's wall times; the interval's
evaluation included, the same in every interval). Passes when, once the buffer is full, the
memory stays within 5% of its lowest sample and every interval's seconds per 1000 steps
within 25% of their median. Writes <out>/soak.md and soak.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FULL_STEPS = 1_000_000
MEMORY_TOLERANCE = 0.05  # after the buffer is full: max / min resident memory - 1
SPEED_TOLERANCE = 0.25  # every interval's s / 1000 steps within this of their median


def command(steps: int, every: int, save_dir: Path, extra: list[str]) -> list[str]:
    return [
        sys.executable, str(ROOT / "jax_rl" / "main_dm_control.py"), "--policy", "SAC",
        "--domain_name", "cheetah", "--task_name", "run", "--max_timesteps", str(steps),
        "--replay_size", str(replay_size(steps)), "--eval_freq", str(every),
        "--eval_episodes", "1", "--log_freq", str(min(every, 1000)),
        "--checkpoint_every", str(steps), "--no_progress", "--save_dir", str(save_dir), *extra,
    ]  # fmt: skip


def replay_size(steps: int) -> int:
    return max(steps // 4, 1000)


def resident_bytes(pid: int) -> int | None:
    """The process's resident memory (VmRSS), or None once it has gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def wall_times(train_csv: Path) -> dict[int, float]:
    """step -> wall time (s) of every row train.csv holds so far."""
    if not train_csv.exists():
        return {}
    with train_csv.open() as f:
        return {int(r["step"]): float(r["wall_time"]) for r in csv.DictReader(f) if r.get("step")}


def soak(steps: int, every: int, work: Path, extra: list[str], poll: float = 1.0) -> dict[str, Any]:
    """Run the soak; returns its samples and verdicts."""
    save_dir = work / "run"
    cmd = command(steps, every, save_dir, extra)
    started = time.perf_counter()
    log = work / "run.log"  # a file, not a pipe: a long run must never block on its output
    with log.open("w") as sink:
        child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=sink)
    samples: list[dict[str, Any]] = []
    next_mark = every
    while True:
        done = child.poll() is not None
        times = wall_times(save_dir / "train.csv")
        reached = max(times, default=0)
        while next_mark <= reached and next_mark <= steps:
            memory = resident_bytes(child.pid) if not done else None
            before = max((s for s in times if s <= next_mark - every), default=None)
            window = None
            if before is not None and next_mark in times:
                window = (times[next_mark] - times[before]) / (next_mark - before) * 1000
            samples.append(
                {"step": next_mark, "resident_bytes": memory, "seconds_per_1000": window}
            )
            next_mark += every
        if done:
            break
        time.sleep(poll)
    stderr = log.read_text()
    full_at = replay_size(steps)
    after_full = [s["resident_bytes"] for s in samples if s["step"] > full_at]
    after_full = [m for m in after_full if m is not None]
    speeds = [s["seconds_per_1000"] for s in samples if s["seconds_per_1000"] is not None]
    median = sorted(speeds)[len(speeds) // 2] if speeds else None
    memory_growth = max(after_full) / min(after_full) - 1 if len(after_full) > 1 else None
    speed_spread = max(abs(v / median - 1) for v in speeds) if speeds and median else None
    return {
        "command": " ".join(cmd[1:]),
        "steps": steps,
        "every": every,
        "replay_full_at": full_at,
        "returncode": child.returncode,
        "error": stderr.strip().splitlines()[-1] if child.returncode and stderr.strip() else None,
        "samples": samples,
        "memory_growth_after_full": memory_growth,
        "seconds_per_1000_median": median,
        "seconds_per_1000_largest_deviation": speed_spread,
        "wall_seconds": time.perf_counter() - started,
    }


def passed(row: dict[str, Any]) -> bool:
    growth, spread = row["memory_growth_after_full"], row["seconds_per_1000_largest_deviation"]
    return bool(
        row["returncode"] == 0
        and growth is not None
        and growth <= MEMORY_TOLERANCE
        and spread is not None
        and spread <= SPEED_TOLERANCE
    )


def _percent(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def markdown(row: dict[str, Any], machine: dict[str, Any]) -> str:
    lines = [
        "# Soak: SAC on the host loop, memory and speed over a long run (`make soak`)",
        "",
        f"{row['steps']:,} steps of SAC on cheetah-run, replay buffer of "
        f"{row['replay_full_at']:,} rows (full from step {row['replay_full_at']:,}); a sample "
        f"every {row['every']:,} steps (jax_rl/tools/soak.py). Passes when the resident memory "
        f"after the buffer is full stays within {MEMORY_TOLERANCE:.0%} of its lowest sample and "
        f"every interval's seconds per 1000 steps within {SPEED_TOLERANCE:.0%} of their median.",
        "",
        f"- memory growth after the buffer is full: {_percent(row['memory_growth_after_full'])}",
        f"- seconds per 1000 steps: median {row['seconds_per_1000_median'] or 0:.2f}, largest "
        f"deviation {_percent(row['seconds_per_1000_largest_deviation'])}",
        f"- verdict: {'passed' if passed(row) else '**failed**'}; wall "
        f"{row['wall_seconds'] / 3600:.2f} h",
        "",
        "| step | resident memory (MiB) | s / 1000 steps over the interval |",
        "|---|---|---|",
    ]
    for s in row["samples"]:
        memory = "n/a" if s["resident_bytes"] is None else f"{s['resident_bytes'] / 2**20:,.0f}"
        speed = "n/a" if s["seconds_per_1000"] is None else f"{s['seconds_per_1000']:.2f}"
        lines.append(f"| {s['step']:,} | {memory} | {speed} |")
    lines += [
        "",
        f"Command: `python {row['command']}`",
        "",
        f"Machine: {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=FULL_STEPS, help="environment steps")
    parser.add_argument("--every", type=int, default=50_000, help="steps between samples")
    parser.add_argument(
        "--out",
        default=None,
        help="folder for soak.md/.json (default docs/benchmarks at 1M steps or more; a "
        "temporary folder for a shorter soak)",
    )
    parser.add_argument(
        "--flags", default="", help="more flags for the run, e.g. '--hidden_sizes 64,64'"
    )
    args = parser.parse_args(argv)
    if args.steps < 1 or args.every < 1 or args.every > args.steps:
        print(
            "error: --steps and --every must be positive integers, --every at most --steps",
            file=sys.stderr,
        )
        return 2
    if args.out is None:
        from jax_rl.io.logger import scratch_folder

        full = args.steps >= FULL_STEPS and not args.flags
        args.out = "docs/benchmarks" if full else scratch_folder("soak", "a shorter soak")
    from jax_rl.tools.benchmark import machine

    print(f"soak: {args.steps:,} steps of SAC, a sample every {args.every:,} ...", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="jax_rl-soak-") as work:
        row = soak(args.steps, args.every, Path(work), args.flags.split())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = machine()
    (out / "soak.md").write_text(markdown(row, info))
    (out / "soak.json").write_text(json.dumps({"machine": info, **row}, indent=2))
    print(markdown(row, info))
    return 0 if passed(row) else 1


if __name__ == "__main__":
    sys.exit(main())
