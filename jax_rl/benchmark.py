"""Seconds per 1000 training steps for each learner, in one command.

    python -m jax_rl.benchmark            # full table (make bench)
    python -m jax_rl.benchmark --quick    # tiny sizes, same code path (used by the tests)

A training step of the host loop is one dm_control environment step plus the
loop's one jitted call (insert, sample a batch of 256, one update, next
action), exactly as `jax_rl.loops.host.Collector` runs it during training.
Times are steady state: the buffer is prefilled, compilation is timed apart,
warm-up steps are not timed, and every timed block ends with
`block_until_ready` on the whole learner (see `jax_rl.timing`).

Writes docs/benchmarks/host.md and host.json with the machine's description.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

import jax

from jax_rl import algos, timing
from jax_rl.envs.dm_control import DMControlEnv
from jax_rl.loops import host


@dataclasses.dataclass(frozen=True)
class BenchSettings:
    batch_size: int = 256
    hidden_sizes: tuple[int, ...] = (256, 256)
    steps_per_block: int = 1000
    num_blocks: int = 5
    warmup_steps: int = 500
    prefill: int = 1000
    domain_name: str = "cartpole"
    task_name: str = "swingup"


QUICK = BenchSettings(
    batch_size=32,
    hidden_sizes=(32, 32),
    steps_per_block=20,
    num_blocks=2,
    warmup_steps=5,
    prefill=64,
)


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    device = jax.devices()[0]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "accelerator": device.device_kind if device.platform != "cpu" else "none",
        "jax": jax.__version__,
        "python": platform.python_version(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


def bench_host_step(name: str, settings: BenchSettings, seed: int = 0) -> dict[str, Any]:
    """Seconds per 1000 host-loop training steps of learner `name`."""
    algo = algos.get(name)
    config = algo.Config(hidden_sizes=settings.hidden_sizes)
    env = DMControlEnv(settings.domain_name, settings.task_name, seed=seed)
    fns = host.make_step_functions(algo, settings.batch_size)
    capacity = settings.prefill + settings.steps_per_block * (settings.num_blocks + 1) + 1
    capacity += settings.warmup_steps
    learner = host.init_learner(
        algo,
        config,
        env.obs_size,
        env.action_size,
        capacity,
        settings.batch_size,
        jax.random.key(seed),
    )
    collector = host.Collector(env, fns, learner, settings.prefill, seed)
    while collector.steps + 1 < settings.prefill:
        collector.step()

    def step() -> host.Learner:
        collector.step()
        return collector.learner

    result = timing.time_steps(
        step, settings.steps_per_block, settings.num_blocks, settings.warmup_steps
    )
    median, mean, std = result.per_1000()
    batch = jax.tree_util.tree_map(
        lambda x: x[: settings.batch_size], collector.learner.replay.data
    )
    flops = timing.compiled_flops(
        jax.jit(algo.update), collector.learner.agent, batch, jax.random.key(0)
    )
    return {
        "policy": name,
        "seconds_per_1000_median": median,
        "seconds_per_1000_mean": mean,
        "seconds_per_1000_std": std,
        "compile_seconds": result.first_call_seconds,
        "flops_per_update": flops,
        "achieved_flops_per_second": flops / (median / 1000.0) if flops else None,
        "blocks": list(result.block_seconds),
    }


def markdown(
    rows: list[dict[str, Any]], info: dict[str, Any], settings: BenchSettings, matmul: float
) -> str:
    lines = [
        f"# Host loop: seconds per 1000 training steps ({settings.domain_name}-"
        f"{settings.task_name}, batch {settings.batch_size}, "
        f"{'-'.join(map(str, settings.hidden_sizes))} networks)",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, accelerator {info['accelerator']}, "
        f"JAX {info['jax']}. Large-matmul rate measured in the same run: "
        f"{matmul / 1e9:.0f} GFLOP/s.",
        "",
        "| policy | s / 1000 steps (median) | mean ± std | compile (s) | GFLOP / update "
        "| achieved GFLOP/s | of matmul rate |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        flops = r["flops_per_update"]
        achieved = r["achieved_flops_per_second"]
        lines.append(
            f"| {r['policy']} | {r['seconds_per_1000_median']:.2f} | "
            f"{r['seconds_per_1000_mean']:.2f} ± {r['seconds_per_1000_std']:.2f} | "
            f"{r['compile_seconds']:.1f} | {flops / 1e9:.3f} | {achieved / 1e9:.0f} | "
            f"{achieved / matmul:.0%} |"
            if flops and achieved
            else f"| {r['policy']} | {r['seconds_per_1000_median']:.2f} | "
            f"{r['seconds_per_1000_mean']:.2f} ± {r['seconds_per_1000_std']:.2f} | "
            f"{r['compile_seconds']:.1f} | n/a | n/a | n/a |"
        )
    lines += [
        "",
        "A training step is one environment step plus one jitted call (insert, sample, one "
        "update, next action). FLOPs come from XLA's cost analysis of one update; for TD3 "
        "both branches of the delayed actor update are counted, so its figure is an upper "
        "bound.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, same code path")
    parser.add_argument(
        "--policies", default=",".join(algos.ALGORITHMS), help="comma-separated learners to time"
    )
    parser.add_argument("--out", default="docs/benchmarks", help="folder for host.md/host.json")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else BenchSettings()
    names = [n for n in args.policies.split(",") if n]
    for name in names:
        if name not in algos.ALGORITHMS:
            print(
                f"error: unknown policy {name!r}; choose from {', '.join(algos.ALGORITHMS)}",
                file=sys.stderr,
            )
            return 2

    info = machine()
    matmul = timing.matmul_rate(256 if args.quick else 2048, repeats=3 if args.quick else 10)
    rows = []
    for name in names:
        print(f"timing {name} ...", file=sys.stderr, flush=True)
        rows.append(bench_host_step(name, settings))
    table = markdown(rows, info, settings, matmul)
    print(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "host.md").write_text(table)
    payload = {
        "machine": info,
        "settings": dataclasses.asdict(settings),
        "matmul_flops_per_second": matmul,
        "host_loop": rows,
    }
    (out / "host.json").write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
