"""Every task of Playground's DM Control Suite loads and trains on the device pipeline.

    .venv/bin/python docs/benchmarks/playground_tasks.py [TASK ...] [--out FILE]

For each task (default: the whole suite, the hard ones first) runs `main_brax.py`
with TD3 at tiny sizes (4 envs, 2 updates of 32, 16-wide networks, 3 chunks of 8
iterations) with the task's published episode length and action repeat, in a
process of its own, and records whether it finished, the episode length and
action repeat it ran with, and the wall time (mostly MJX compilation on a CPU).
Writes a Markdown table (default docs/benchmarks/playground_tasks.md), row by row.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HARD = ["HumanoidStand", "HumanoidWalk", "HumanoidRun", "HopperHop", "WalkerRun"]
TINY = (
    "--policy TD3 --preset paper --num_envs 4 --updates_per_step 2 --batch_size 32 "
    "--hidden_sizes 16 --start_timesteps 32 --max_timesteps 96 --log_freq 32 --eval_freq 96 "
    "--eval_episodes 2 --no_progress"
).split()


def check(task: str) -> dict:
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "jax_rl/main_brax.py", "--env", task, *TINY, "--save_dir", out],
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
        config = Path(out, "config.json")
        fields = json.loads(config.read_text()) if config.exists() else {}
    loop = fields.get("loop", fields)
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    return {
        "task": task,
        "ok": done.returncode == 0,
        "episode_length": loop.get("episode_length"),
        "action_repeat": fields.get("action_repeat"),
        "seconds": seconds,
        "last_line": last,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*")
    parser.add_argument("--out", default="docs/benchmarks/playground_tasks.md")
    args = parser.parse_args()
    from jax_rl.envs import playground

    suite = playground.suites()["dm_control"]
    tasks = args.tasks or HARD + [t for t in sorted(suite) if t not in HARD]
    lines = [
        "# Playground's DM Control Suite on the device pipeline: the tasks load and train",
        "",
        "`python docs/benchmarks/playground_tasks.py` (TD3, 4 envs x 2 updates of 32, 96 env "
        "steps, on this project's 2-core CPU; seconds are mostly MJX compilation).",
        "",
        "| task | trained | episode length | action repeat | seconds |",
        "|---|---|---|---|---|",
    ]
    for task in tasks:
        row = check(task)
        lines.append(
            f"| {task} | {'yes' if row['ok'] else 'no: ' + row['last_line']} | "
            f"{row['episode_length']} | {row['action_repeat']} | {row['seconds']:.0f} |"
        )
        Path(args.out).write_text("\n".join(lines) + "\n")
        print(lines[-1], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
