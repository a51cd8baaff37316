"""The GPU check: every figure the accelerator-scale recipe needs, in one prepared command.

    make gpu-check                                   # on a machine with a GPU
    python -m jax_rl.tools.gpu_check --tiny --out /tmp/gc  # the same code path on a CPU, tiny sizes

GPU time comes in minutes, so this script runs end to end on the CPU first
(`--tiny`, in the test suite: the speed and population figures on the JAX-native
point mass, whose programs are the GPU's learner programs with a physics that compiles
in seconds, and the curves on Playground's PointMass, which takes MJX through the same
path), and on the GPU measures, in order of importance,
writing its files after every measurement (a run cut short keeps what it had):

1. speed: TD3 and SAC on `--speed_task` (CheetahRun), environment steps and
   updates per second of the device pipeline's training chunk (physics, replay
   and updates), at the CPU recipe (16 envs x 16 updates of 256, 256-256
   networks) and at the `fast` preset (1,024 envs x 2 updates of 32,768, a
   categorical critic 1024-512-256 wide, normalisation); TD3 `fast` also with
   bf16 matrix products;
2. populations: SAC at the CPU recipe, 1, 16 and 64 agents in one program;
3. learning: return against wall-clock time of TD3 `fast` for `--curve_seconds`
   on each `--curve_tasks` task (HumanoidWalk, CheetahRun), `--curve_evals`
   evaluations after the first: CSV and figure. `--curve_configs fast,simba` adds
   the same with a SimBa critic (2 blocks, 512 wide) beside each plain curve.

Compiled programs go to JAX's persistent cache in `--cache_dir` (.jax_cache, kept on
the machine between commands): a second command, after a lease cut the first short,
loads them instead of compiling again.

`--parts` runs a subset of the three (a lease that ran out finishes what is missing).
Every configuration is resolved exactly as `main_brax.py` resolves its flags
(presets included), so what is timed is what a user runs. Writes
`<out>/gpu_check.md`, `gpu_check.json`, `curves.csv` and `curves.png`, and each
curve's evaluations under `<results>/<task>/`. Defaults: out
docs/benchmarks/gpu_<device>/, results docs/results/fast_preset/gpu_<device>/.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

PARTS = ("speed", "populations", "curves")
POINT_MASS = "point_mass"  # jax_rl.envs.point_mass.NAME (imported only with JAX)
# The learning curves' configurations: `fast` alone, or with a SimBa critic in place of
# its MLP (the categorical head kept), as published for SimBa (2 blocks, 512 wide).
CURVE_CONFIGS: dict[str, tuple[str, ...]] = {
    "fast": (),
    "simba": (
        "--critic_network", "simba", "--critic_hidden_sizes", "512", "--critic_blocks", "2",
    ),
}  # fmt: skip

# Sizes for `--tiny`: the same programs, small enough for a CPU in the test suite.
TINY_FLAGS = (
    "--num_envs 4 --updates_per_step 2 --batch_size 32 --hidden_sizes 16 "
    "--actor_hidden_sizes 16 --critic_hidden_sizes 16 --num_atoms 11 --replay_size 2048 "
    "--start_timesteps 32 --log_freq 32 --eval_episodes 2 --episode_length 20"
).split()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--tiny", action="store_true", help="tiny sizes on any device (the test suite's run)")
    add("--out", default=None, help="benchmark folder (default docs/benchmarks/gpu_<device>)")
    add("--results", default=None, help="curves' runs (default docs/results/fast_preset/<device>)")
    add(
        "--speed_task",
        default="CheetahRun",
        help="Playground task (or point_mass) of the speed and population figures",
    )
    add("--curve_tasks", default="HumanoidWalk,CheetahRun", help="tasks of the learning curves")
    add("--populations", default="1,16,64", help="population sizes to time (SAC, CPU recipe)")
    add("--curve_seconds", type=float, default=60.0, help="training time of each curve")
    add("--curve_evals", type=int, default=5, help="evaluations of each curve after its first")
    add(
        "--curve_configs",
        default="fast",
        help=f"curve configurations, comma-separated: {', '.join(CURVE_CONFIGS)} (fast with "
        "a SimBa critic)",
    )
    add("--cache_dir", default=".jax_cache", help="JAX's persistent compilation cache")
    add("--blocks", type=int, default=3, help="timed chunks per speed figure")
    add(
        "--parts",
        default=",".join(PARTS),
        help="which measurements to run (a comma-separated subset of speed,populations,"
        "curves; they run in that order): finishes a run that a lease cut short",
    )
    args = parser.parse_args(argv)
    if args.tiny:
        # The speed and population figures' six training chunks on the JAX-native point
        # mass (seconds each to compile, where MJX takes 10-15 s); the curve on
        # Playground's cheapest task.
        args.speed_task = args.speed_task if "--speed_task" in (argv or []) else POINT_MASS
        if "--curve_tasks" not in (argv or []):
            args.curve_tasks = "PointMass"
        if "--populations" not in (argv or []):
            args.populations = "1,2"
        if "--curve_seconds" not in (argv or []):
            args.curve_seconds = 2.0
    return args


def check_args(args: argparse.Namespace) -> str | None:
    """The first bad argument as one line, or None (checked before anything compiles)."""
    from jax_rl.envs import playground

    tasks = [t for t in (args.speed_task, *args.curve_tasks.split(",")) if t != POINT_MASS]
    unknown = [t for t in tasks if not playground.is_task(t)]
    if unknown:
        return f"unknown Playground task(s) {', '.join(unknown)}"
    try:
        sizes = [int(n) for n in args.populations.split(",")]
    except ValueError:
        return f"--populations takes comma-separated integers, got {args.populations!r}"
    if not sizes or min(sizes) < 1:
        return f"--populations must be positive, got {args.populations!r}"
    parts = args.parts.split(",")
    if not parts or any(p not in PARTS for p in parts):
        return f"--parts takes a comma-separated subset of {','.join(PARTS)}, got {args.parts!r}"
    if not args.curve_seconds > 0 or args.blocks < 1 or args.curve_evals < 1:
        return "--curve_seconds must be > 0, --blocks and --curve_evals >= 1"
    configs = args.curve_configs.split(",")
    if not configs or any(c not in CURVE_CONFIGS for c in configs):
        choices = ",".join(CURVE_CONFIGS)
        return f"--curve_configs takes a comma-separated subset of {choices}, got {configs}"
    for task in tasks:
        try:
            playground.check_assets(task)
        except playground.MissingAssetsError as e:
            return str(e)
    return None


def device_slug() -> str:
    """gpu_<device kind> (e.g. gpu_nvidia_h100_80gb_hbm3), or cpu."""
    import jax

    device = jax.devices()[0]
    if device.platform == "cpu":
        return "cpu"
    return "gpu_" + re.sub(r"[^a-z0-9]+", "_", device.device_kind.lower()).strip("_")


class Run:
    """One configuration, resolved as `main_brax.py` resolves its flags. `Run.of` keeps
    one per configuration, so that its environment, and with it the compiled programs
    (`device.make_pipeline` caches per environment), serve every measurement of it."""

    _made: dict[tuple[str, ...], Run] = {}

    @classmethod
    def of(cls, flags: Sequence[str]) -> Run:
        key = tuple(flags)
        if key not in cls._made:
            cls._made[key] = cls(flags)
        return cls._made[key]

    def __init__(self, flags: Sequence[str]) -> None:
        from jax_rl import main_brax
        from jax_rl.run import driver

        backend = main_brax.BraxBackend()
        parser = main_brax.build_parser()
        self.settings = driver.resolve_settings(parser, backend, list(flags))
        s = self.settings
        self.trainer = backend.open(s.args, s.loop_config, [a.seed for a in s.agents])
        configs = [s.algo_config]
        if self.trainer.env.actor_obs_size:
            configs = [c.replace(actor_obs_size=self.trainer.env.actor_obs_size) for c in configs]
        self.algo_config = configs[0]

    def pipeline_and_carry(self, num_agents: int) -> tuple[Any, Any]:
        from jax_rl.loops import device

        s, env = self.settings, self.trainer.env
        pipeline = device.make_pipeline(s.algo, env, s.loop_config)
        seed = s.args.seed
        keys, _ = device.agent_keys(range(seed, seed + num_agents))
        carry = device.init_population(
            s.algo, [self.algo_config] * num_agents, env, s.loop_config, keys
        )
        return pipeline, carry


def measure_speed(run: Run, num_agents: int, blocks: int) -> dict[str, Any]:
    """Env steps and updates per second (all agents) of the training chunk, steady state."""
    import jax

    from jax_rl.tools import timing

    loop = run.settings.loop_config
    pipeline, carry = run.pipeline_and_carry(num_agents)
    start = time.perf_counter()
    carry = jax.block_until_ready(pipeline.train_chunk(carry))
    compile_seconds = time.perf_counter() - start
    while int(carry.env_steps) < loop.start_timesteps + loop.chunk_steps:  # past the prefill
        carry = pipeline.train_chunk(carry)
    state = {"carry": carry}

    def step() -> Any:
        state["carry"] = pipeline.train_chunk(state["carry"])
        return state["carry"]

    result = timing.time_steps(step, 1, blocks, 0)
    seconds = sorted(result.block_seconds)[len(result.block_seconds) // 2]
    updates = loop.iterations_per_chunk * loop.updates_per_step * num_agents
    return {
        "num_agents": num_agents,
        "num_envs": loop.num_envs,
        "updates_per_step": loop.updates_per_step,
        "batch_size": loop.batch_size,
        "env_steps_per_second": loop.chunk_steps * num_agents / seconds,
        "updates_per_second": updates / seconds,
        "samples_per_second": updates * loop.batch_size / seconds,
        "first_chunk_seconds": compile_seconds,
        "blocks": list(result.block_seconds),
    }


def learning_curve(
    run: Run, seconds: float, results: Path, evaluations: int = 5
) -> list[dict[str, float]]:
    """Train one agent for `seconds` of wall time (compilation and evaluation not
    counted), evaluating at the start and then `evaluations` times, evenly; rows of
    (wall_time, env_steps, updates, return_mean, return_std)."""
    import jax
    import jax.numpy as jnp

    pipeline, carry = run.pipeline_and_carry(1)
    eval_key = jax.random.key(run.settings.args.seed + 1)[None]
    rows: list[dict[str, float]] = []
    carry = jax.block_until_ready(pipeline.train_chunk(carry))  # compiles
    jax.block_until_ready(pipeline.evaluate(carry.agent, eval_key, jnp.bool_(False)))
    start = time.perf_counter()
    evaluating = 0.0  # seconds spent evaluating, left out of the training time
    last_eval = -float("inf")
    while True:
        elapsed = time.perf_counter() - start - evaluating
        done = elapsed >= seconds
        if done or elapsed - last_eval >= seconds / evaluations:
            eval_start = time.perf_counter()
            pairs = jax.vmap(jax.random.split)(eval_key)
            eval_key, now = pairs[:, 0], pairs[:, 1]
            returns = jax.device_get(pipeline.evaluate(carry.agent, now, jnp.bool_(False)))
            evaluating += time.perf_counter() - eval_start
            rows.append(
                {
                    "wall_time": elapsed,
                    "env_steps": int(carry.env_steps),
                    "updates": int(carry.updates),
                    "return_mean": float(returns.mean()),
                    "return_std": float(returns.std()),
                }
            )
            last_eval = elapsed
            print(
                f"  {run.settings.task}: {elapsed:6.1f} s, {int(carry.env_steps):,} env steps, "
                f"return {rows[-1]['return_mean']:.1f}",
                file=sys.stderr,
                flush=True,
            )
        if done:
            break
        carry = pipeline.train_chunk(carry)
    results.mkdir(parents=True, exist_ok=True)
    _write_csv(results / "evaluations.csv", rows)
    return rows


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def cpu_recipe(policy: str, task: str, tiny: bool) -> list[str]:
    """main_brax.py flags of the CPU recipe: 16 envs x 16 updates of 256, 256-256 nets."""
    flags = ["--policy", policy, "--env", task, "--preset", "paper", "--num_envs", "16"]
    flags += ["--updates_per_step", "16", "--batch_size", "256"]
    return flags + (TINY_FLAGS if tiny else [])


def fast(policy: str, task: str, tiny: bool, *extra: str) -> list[str]:
    """main_brax.py flags of the `fast` preset (plus `extra`). On the point mass, which no
    preset names, its Playground-wide entry: what a Playground task without one takes."""
    preset = "fast/playground/*" if task == POINT_MASS else "fast"
    flags = ["--policy", policy, "--env", task, "--preset", preset, *extra]
    return flags + (TINY_FLAGS if tiny else [])


def speed_configs(task: str, tiny: bool) -> list[tuple[str, list[str]]]:
    """(label, main_brax.py flags) of the speed figures."""
    return [
        ("TD3 CPU recipe", cpu_recipe("TD3", task, tiny)),
        ("TD3 fast preset", fast("TD3", task, tiny)),
        ("TD3 fast preset, bf16 matmuls", fast("TD3", task, tiny, "--matmul_dtype", "bf16")),
        ("SAC CPU recipe", cpu_recipe("SAC", task, tiny)),
        ("SAC fast preset", fast("SAC", task, tiny)),
    ]


def _device_name(machine: dict[str, Any]) -> str:
    accelerator = machine["accelerator"]
    return f"the CPU ({machine['cpu']})" if accelerator == "none" else accelerator


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# GPU check on {_device_name(report['machine'])}",
        "",
        f"Command: `{report['command']}` ({report['date']}; JAX {report['machine']['jax']}).",
        "Definitions: docs/benchmarks/README.md and ../../shared/DESIGN.md section 6 "
        "(steady state; compilation apart; rates count every agent's steps and updates).",
        "",
        "## Speed (device pipeline: physics, replay and updates)",
        "",
        "| configuration | task | envs x updates x batch | env steps/s | updates/s | "
        "samples/s | first chunk (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report["speed"]:
        lines.append(
            f"| {row['label']} | {row['task']} | {row['num_envs']} x {row['updates_per_step']}"
            f" x {row['batch_size']} | {row['env_steps_per_second']:,.0f} | "
            f"{row['updates_per_second']:,.1f} | {row['samples_per_second']:,.0f} | "
            f"{row['first_chunk_seconds']:.1f} |"
        )
    if report["populations"]:
        base = (
            report["populations"][0]["env_steps_per_second"]
            / report["populations"][0]["num_agents"]
        )
        lines += [
            "",
            "## Populations (SAC, CPU recipe, one program)",
            "",
            "| agents | env steps/s (all) | updates/s (all) | cost vs one agent |",
            "|---|---|---|---|",
        ]
        for row in report["populations"]:
            per_agent = row["env_steps_per_second"] / row["num_agents"]
            lines.append(
                f"| {row['num_agents']} | {row['env_steps_per_second']:,.0f} | "
                f"{row['updates_per_second']:,.0f} | {base / per_agent:.2f}x |"
            )
    if report["curves"]:
        lines += [
            "",
            "## Return against wall-clock time (TD3, fast preset; compilation not counted)",
            "",
            "| task | seconds | env steps | updates | final return |",
            "|---|---|---|---|---|",
        ]
        for task, rows in report["curves"].items():
            last = rows[-1]
            lines.append(
                f"| {task} | {last['wall_time']:.0f} | {last['env_steps']:,} | "
                f"{last['updates']:,} | {last['return_mean']:.1f} |"
            )
        lines += ["", "![return against wall-clock time](curves.png)"]
    return "\n".join(lines) + "\n"


def plot_curves(curves: dict[str, list[dict[str, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for task, rows in curves.items():
        ax.plot([r["wall_time"] for r in rows], [r["return_mean"] for r in rows], label=task)
    ax.set_xlabel("wall-clock seconds (compilation not counted)")
    ax.set_ylabel("evaluation return")
    ax.set_title("TD3, fast preset")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def use_compilation_cache(folder: Path) -> None:
    """Every program this process compiles goes to (and comes from) JAX's persistent
    cache in `folder`, however quick its compilation."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    folder.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(folder.resolve()))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # JAX opens its cache at the process's first compilation and keeps that folder: a
    # process that compiled before this call (a notebook, a test) is pointed here anew.
    compilation_cache.reset_cache()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    error = check_args(args)
    if error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from jax_rl.io import quiet
    from jax_rl.io.logger import scratch_folder
    from jax_rl.tools.benchmark import machine

    quiet.install()
    use_compilation_cache(Path(args.cache_dir))
    slug = device_slug()
    if args.tiny and (args.out is None or args.results is None):  # never into docs/
        scratch = scratch_folder("gpu-check", "--tiny")
        args.out, args.results = args.out or scratch / "out", args.results or scratch / "results"
    out = Path(args.out or f"docs/benchmarks/{slug}")
    results = Path(args.results or f"docs/results/fast_preset/{slug}")
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "command": "python -m jax_rl.tools.gpu_check " + " ".join(argv),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "speed": [],
        "populations": [],
        "curves": {},
    }
    started = time.perf_counter()

    def save() -> None:
        (out / "gpu_check.json").write_text(json.dumps(report, indent=2))
        (out / "gpu_check.md").write_text(markdown(report))

    def step(what: str, fn: Callable[[], Any]) -> Any:
        print(f"gpu-check: {what} ({time.perf_counter() - started:.0f} s so far)", file=sys.stderr)
        value = fn()
        save()
        return value

    parts = args.parts.split(",")
    for label, flags in speed_configs(args.speed_task, args.tiny) if "speed" in parts else []:
        run = Run.of(flags)
        row = step(label, functools.partial(measure_speed, run, 1, args.blocks))
        report["speed"].append({"label": label, "task": args.speed_task, **row})
        save()
    for size in (int(n) for n in args.populations.split(",")) if "populations" in parts else []:
        sac = Run.of(cpu_recipe("SAC", args.speed_task, args.tiny))
        row = step(
            f"SAC population of {size}", functools.partial(measure_speed, sac, size, args.blocks)
        )
        report["populations"].append(row)
        save()
    curves = [(t, c) for t in args.curve_tasks.split(",") for c in args.curve_configs.split(",")]
    for task, config in curves if "curves" in parts else []:
        name = task if config == "fast" else f"{task} {config}"
        run = Run.of(fast("TD3", task, args.tiny, *CURVE_CONFIGS[config]))
        folder = results / name.replace(" ", "-")
        curve = functools.partial(learning_curve, run, args.curve_seconds, folder, args.curve_evals)
        report["curves"][name] = step(f"TD3 {config} on {task} for {args.curve_seconds:g} s", curve)
        save()
    curve_rows = [{"task": t, **r} for t, rows in report["curves"].items() for r in rows]
    if curve_rows:
        _write_csv(out / "curves.csv", curve_rows)
        plot_curves(report["curves"], out / "curves.png")
    save()
    print(
        f"gpu-check: done in {time.perf_counter() - started:.0f} s; wrote {out} and {results}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
