"""Peer comparison: our host loop against Stable-Baselines3 (PyTorch) and SBX (JAX).

    make bench-peers        # installs the optional `peers` group into .venv-peers, then runs this
    python -m jax_rl.tools.bench_peers --tasks HalfCheetah-v5     # one task only

Every library trains TD3 and SAC on the same task, with the same settings:
batch 256, 256-256 networks, Adam 3e-4, tau 0.005, one environment step and
one gradient update per training step, 1000 warm-up steps. Two tasks:
Gymnasium's HalfCheetah-v5 (the peers step `gymnasium.make("HalfCheetah-v5")`,
we step our Gymnasium adapter around the same environment) and dm_control
cartpole-swingup (our adapter, behind a gymnasium interface for the peers). A
training step is timed the same way for all: the median over blocks of 1000
steps after a warm-up, compilation apart (the peers step synchronously: each
step's action is pulled to the host). One run measures everything, so the
ratios (our seconds over the peer's) are comparable even on a loaded machine.
Writes docs/benchmarks/peers.{md,json}.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from jax_rl.envs import HostEnv
from jax_rl.envs.dm_control import DMControlEnv
from jax_rl.envs.gymnasium import GymnasiumEnv
from jax_rl.io.logger import scratch_folder
from jax_rl.tools.benchmark import BenchSettings, bench_host_step, machine

PEERS = ("SBX", "SB3")


@dataclasses.dataclass(frozen=True)
class PeerTask:
    """One task as each side steps it."""

    title: str  # for the table
    ours: Callable[[int], HostEnv]  # seed -> our adapter
    peers: Callable[[int], Any]  # seed -> the gymnasium.Env the peers train on


def _dm_control_gym(domain_name: str, task_name: str, seed: int) -> Any:
    import gymnasium

    class DMControlGym(gymnasium.Env):
        """Our dm_control adapter as a gymnasium environment (time limit = truncation)."""

        def __init__(self) -> None:
            self._env = DMControlEnv(domain_name, task_name, seed=seed)
            self.action_space = gymnasium.spaces.Box(
                -1.0, 1.0, (self._env.action_size,), np.float32
            )
            self.observation_space = gymnasium.spaces.Box(
                -np.inf, np.inf, (self._env.obs_size,), np.float32
            )

        def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict]:
            super().reset(seed=seed)
            return self._env.reset(), {}

        def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
            step = self._env.step(action)
            terminated = step.last and step.discount == 0.0
            return step.next_obs, step.reward, terminated, step.last and not terminated, {}

    return DMControlGym()


def _gymnasium_make(env_id: str) -> Any:
    import gymnasium

    return gymnasium.make(env_id)


TASKS = {
    "HalfCheetah-v5": PeerTask(
        "Gymnasium HalfCheetah-v5",
        lambda seed: GymnasiumEnv("HalfCheetah-v5", seed=seed),
        lambda seed: _gymnasium_make("HalfCheetah-v5"),  # the peers seed it themselves
    ),
    "cartpole-swingup": PeerTask(
        "dm_control cartpole-swingup",
        lambda seed: DMControlEnv("cartpole", "swingup", seed=seed),
        lambda seed: _dm_control_gym("cartpole", "swingup", seed),
    ),
}


def bench_peer(
    library: str, name: str, task: PeerTask, settings: BenchSettings, seed: int = 0
) -> dict[str, Any]:
    """Seconds per 1000 training steps of `library`'s `name` ("TD3" or "SAC") on `task`."""
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.noise import NormalActionNoise

    if library == "SB3":
        import stable_baselines3 as lib
        import torch

        torch.manual_seed(seed)
    else:
        import sbx as lib

    env = task.peers(seed)
    total = (
        settings.prefill + settings.warmup_steps + settings.num_blocks * settings.steps_per_block
    )
    kwargs: dict[str, Any] = dict(
        learning_rate=3e-4,
        buffer_size=total + 1,
        learning_starts=settings.prefill,
        batch_size=settings.batch_size,
        tau=0.005,
        gamma=0.99,
        train_freq=1,
        gradient_steps=1,
        policy_kwargs={"net_arch": list(settings.hidden_sizes)},
        seed=seed,
        verbose=0,
    )
    if name == "TD3":
        size = env.action_space.shape[0]
        kwargs["action_noise"] = NormalActionNoise(np.zeros(size), 0.1 * np.ones(size))
    if library == "SB3":
        kwargs["device"] = "cpu"
    model = getattr(lib, name)("MlpPolicy", env, **kwargs)

    marks: dict[int, float] = {}
    first_update = settings.prefill + 1

    class Clock(BaseCallback):
        def _on_step(self) -> bool:
            # Called after each environment step; the update of step t runs after it.
            marks[self.num_timesteps] = time.perf_counter()
            return True

    model.learn(total_timesteps=total, callback=Clock())
    start = settings.prefill + settings.warmup_steps
    blocks = [
        marks[start + (b + 1) * settings.steps_per_block]
        - marks[start + b * settings.steps_per_block]
        for b in range(settings.num_blocks)
    ]
    compile_seconds = marks[first_update + 1] - marks[first_update]
    scaled = [s * 1000.0 / settings.steps_per_block for s in blocks]
    return {
        "library": library,
        "policy": name,
        "seconds_per_1000_median": statistics.median(scaled),
        "seconds_per_1000_mean": statistics.fmean(scaled),
        "seconds_per_1000_std": statistics.stdev(scaled),
        "first_update_seconds": compile_seconds,
        "blocks": blocks,
    }


def markdown(rows: list[dict[str, Any]], info: dict[str, Any]) -> str:
    by = {(r["task"], r["library"], r["policy"]): r for r in rows}
    lines = [
        "Seconds per 1000 training steps (one env step + one update of batch 256), host loop, "
        "256-256 networks; median over blocks of 1000 steps (mean +- std), one run. "
        "Ratio: ours / peer (below 1: we are faster).",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, JAX {info['jax']}, "
        f"accelerator: {info['accelerator']}.",
        "",
        "| task | algorithm | jax_rl | SBX (JAX) | SB3 (PyTorch) | jax_rl / SBX | jax_rl / SB3 |",
        "|---|---|---|---|---|---|---|",
    ]

    def cell(r: dict[str, Any]) -> str:
        return (
            f"{r['seconds_per_1000_median']:.2f} "
            f"({r['seconds_per_1000_mean']:.2f} +- {r['seconds_per_1000_std']:.2f})"
        )

    tasks = list(dict.fromkeys(r["task"] for r in rows))
    for task in tasks:
        for name in ("TD3", "SAC"):
            ours, sbx, sb3 = (by[(task, lib, name)] for lib in ("jax_rl", *PEERS))
            o = ours["seconds_per_1000_median"]
            lines.append(
                f"| {TASKS[task].title} | {name} | {cell(ours)} | {cell(sbx)} | {cell(sb3)} | "
                f"{o / sbx['seconds_per_1000_median']:.2f} | "
                f"{o / sb3['seconds_per_1000_median']:.2f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        default=None,
        help="folder for peers.md/.json (default docs/benchmarks; a temporary folder when "
        "fewer blocks or tasks than the table's are timed)",
    )
    parser.add_argument("--num_blocks", type=int, default=5, help="timed blocks of 1000 steps")
    parser.add_argument(
        "--tasks", default=",".join(TASKS), help=f"comma-separated, of: {', '.join(TASKS)}"
    )
    args = parser.parse_args(argv)
    tasks = args.tasks.split(",")
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        parser.error(f"unknown task {unknown[0]!r}; choose from {', '.join(TASKS)}")
    try:
        import sbx  # noqa: F401
        import stable_baselines3  # noqa: F401
    except ImportError as e:
        print(
            f"error: {e.name} is not installed; run `make bench-peers` (it installs the "
            "optional `peers` group into .venv-peers)",
            file=sys.stderr,
        )
        return 2
    if args.out is None:  # a reduced run never replaces the committed table
        full = args.num_blocks >= 5 and set(tasks) == set(TASKS)
        args.out = "docs/benchmarks" if full else scratch_folder("peers", "a reduced peers run")
    settings = BenchSettings(num_blocks=args.num_blocks)
    rows = []
    for task_name in tasks:
        task = TASKS[task_name]
        for name in ("TD3", "SAC"):
            ours = bench_host_step(name, settings, make_env=task.ours)
            rows.append({"task": task_name, "library": "jax_rl", **ours, "policy": name})
            for library in PEERS:
                rows.append({"task": task_name, **bench_peer(library, name, task, settings)})
            for row in rows[-3:]:
                print(
                    f"{task_name} {row['library']} {name}: "
                    f"{row['seconds_per_1000_median']:.2f} s / 1000 steps",
                    flush=True,
                )
    info = machine()
    table = markdown(rows, info)
    print(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "peers.md").write_text(table)
    versions = {
        m: sys.modules[m].__version__ for m in ("sbx", "stable_baselines3", "torch", "gymnasium")
    }
    (out / "peers.json").write_text(
        json.dumps({"machine": info, "versions": versions, "rows": rows}, indent=2)
    )
    return 0


if __name__ == "__main__":
    from jax_rl.io import quiet

    quiet.install()  # as the entry points do: no settotalmass warning per dm_control env
    sys.exit(main())
