"""How often does undirected exploration meet a sparse reward? No learner, only noise.

Before a learner has seen a reward its policy carries no information, so what it collects is
its exploration noise acting on the task. This script plays such noise on dm_control tasks
and counts the rewards it meets: per process, the share of episodes with any reward and the
mean return per episode. Processes: uniform random actions (the host loop's warm-up), and
Gaussian noise N(0, std^2) clipped to [-1, 1], white (independent per decision) or colored
(`jax_rl.core.noise`, 1/f^beta over the episode), each decision held for K frames
(`jax_rl.envs.repeat`). A process that meets no reward in the frames a run has to spare
leaves the learner nothing to learn from: the floor exploration must clear.

    python docs/benchmarks/exploration_floor.py --out docs/benchmarks/exploration_floor.json
    python docs/benchmarks/exploration_floor.py --tasks cartpole-swingup_sparse --episodes 5
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from jax_rl.core.noise import ColoredNoise  # noqa: E402
from jax_rl.envs.dm_control import DMControlEnv  # noqa: E402
from jax_rl.envs.repeat import repeat_actions  # noqa: E402

TASKS = (
    "cartpole-swingup_sparse", "pendulum-swingup", "finger-turn_hard", "acrobot-swingup",
    "hopper-stand", "cartpole-swingup",
)  # fmt: skip
# (name, std, beta): std None is uniform random actions; beta 0 white, 1 pink, 2 red.
PROCESSES = (
    ("uniform", None, 0.0),
    ("white 0.1", 0.1, 0.0),
    ("white 0.5", 0.5, 0.0),
    ("white 1.0", 1.0, 0.0),
    ("pink 0.1", 0.1, 1.0),
    ("pink 0.5", 0.5, 1.0),
    ("pink 1.0", 1.0, 1.0),
    ("red 1.0", 1.0, 2.0),
)


def play(task: str, std: float | None, beta: float, repeat: int, episodes: int, seed: int):
    """Returns of `episodes` episodes of the process on `task`."""
    domain, name = task.split("-", 1)
    env = repeat_actions(DMControlEnv(domain, name, seed=seed), repeat)
    rng = np.random.default_rng(seed)
    noise = ColoredNoise(beta, env.action_size, seed) if std is not None else None
    returns = []
    for _ in range(episodes):
        env.reset()
        if noise is not None:
            noise.reset()
        total, last = 0.0, False
        while not last:
            if noise is None:
                action = rng.uniform(-1.0, 1.0, env.action_size)
            else:
                action = np.clip(std * noise.next(), -1.0, 1.0)
            step = env.step(action.astype(np.float32))
            total, last = total + step.reward, step.last
        returns.append(total)
    return returns


def _processes(parser: argparse.ArgumentParser, text: str) -> list[tuple[str, float, float]]:
    """`std:beta,...` as (name, std, beta) rows; a bad pair ends the run with one line."""
    names = {0.0: "white", 1.0: "pink", 2.0: "red"}
    rows = []
    for pair in text.split(","):
        try:
            std, beta = (float(x) for x in pair.split(":"))
        except ValueError:
            parser.error(f"--processes: {pair!r} is not std:beta (two numbers, e.g. 2:2)")
        if not (std > 0 and beta >= 0):
            parser.error(f"--processes: {pair!r} needs std > 0 and beta >= 0")
        rows.append((f"{names.get(beta, f'beta {beta:g}')} {std:g}", std, beta))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--repeats", default="1,2", help="action repeats K to try")
    parser.add_argument("--episodes", type=int, default=10, help="episodes per process")
    parser.add_argument(
        "--processes",
        default=None,
        help="Gaussian processes to play in place of the standard list, as std:beta pairs "
        "(beta 0 white, 1 pink, 2 red), e.g. 1:2,2:2",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    args = parser.parse_args()
    rows = []
    repeats = [int(k) for k in args.repeats.split(",")]
    processes = PROCESSES if args.processes is None else _processes(parser, args.processes)
    print("| task | process | K | episodes with a reward | mean return (sd) | s |")
    print("|---|---|---|---|---|---|")
    for task, (name, std, beta), k in itertools.product(args.tasks.split(","), processes, repeats):
        start = time.perf_counter()
        returns = np.asarray(play(task, std, beta, k, args.episodes, args.seed))
        seconds = time.perf_counter() - start
        hit = int((returns > 0.5).sum())
        rows.append(
            {"task": task, "process": name, "action_repeat": k, "returns": returns.tolist()}
        )
        print(
            f"| {task} | {name} | {k} | {hit} / {args.episodes} | "
            f"{returns.mean():.1f} ({returns.std():.1f}) | {seconds:.0f} |",
            flush=True,
        )
    if args.out:
        Path(args.out).write_text(json.dumps({"seed": args.seed, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
