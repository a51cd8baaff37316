"""A race: our recipe against SBX's CrossQ on one task, evaluation return against wall-clock
seconds, both trained side by side in one run.

    make race                 # installs the optional `peers` group into .venv-peers, then runs this
    python -m jax_rl.tools.race --steps 50000     # a shorter one, to a scratch folder

The speed tables (`make bench-peers`) time one training step at settings made equal on
purpose; what a user meets is a different question: how soon does each library's out-of-
the-box run reach a given return? Our side is `main_gym.py --policy TD3` with no flags but
the run's own (so `--preset auto`: the recipe as it stands when the race runs; `--flags` adds
more). SBX's side is `sbx.CrossQ("MlpPolicy", env, seed=S)` with every other setting SBX's
default, as a user would first run it; the settings it used are read back from the model
into race.json and race.md.

Both sides start at the same moment, each in its own process, pinned to a core of its own
(`taskset -c`) where this process may use two or more: a side then cannot borrow the
other's core, and a machine busy with other work slows both alike. Pinning from the start
is what holds each side to one core: `XLA_FLAGS=--xla_cpu_multi_thread_eigen=false`, which
older results notes name, does not limit XLA's threads with JAX 0.10 (docs/cluster.md), so
it is not set. On one core the two share it, which is said, and the race goes on.

Each side's clock starts where its training run starts and counts everything after it:
set-up, compilation, training and the evaluations, which pause training on both sides. Ours
is the run's own evaluations.csv (its logger starts before the learner is built). SBX's is
written here in the same format by a callback that, at step 0 and every `--eval_every` steps
(and at the end, as ours), evaluates `--eval_episodes` episodes of the deterministic policy
on an environment of its own. Python's start-up and imports are outside both clocks.

Writes <out>/race.md (the table, the time to reach a few returns, the machine, commit, date,
command and both sides' settings), race.json (all of it) and race.png (both curves).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import importlib
import importlib.util
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
FULL_STEPS = 100_000
DEFAULT_TASK = "HalfCheetah-v5"
THRESHOLDS = (2_000.0, 4_000.0, 6_000.0, 8_000.0)  # HalfCheetah returns, the marks
POLL_SECONDS = 30.0
STOP_SECONDS = 60.0  # how long a side still running when the other failed may take to stop
SIDES = ("ours", "sbx")
TITLES = {"ours": "jax_rl TD3 (its preset)", "sbx": "SBX CrossQ (its defaults)"}
COLUMNS = ("step", "wall_time", "return_mean", "return_std")
# SBX's evaluation environment is seeded apart from its training one (which SB3 seeds with
# the seed itself), so that the two do not replay the same initial states.
EVAL_SEED_OFFSET = 100


class Evaluation(NamedTuple):
    """One row of evaluations.csv: a side's return at `step`, `wall_time` s into its run."""

    step: int
    wall_time: float
    return_mean: float
    return_std: float


# --- Curves in, tables out (no SBX, no training) ------------------------------------------


def parse_curve(text: str) -> list[Evaluation]:
    """The evaluations of an evaluations.csv's text. A row still being written (no newline
    yet) or not a row of numbers is skipped: the race reads the files while they grow."""
    complete = text[: text.rfind("\n") + 1]
    rows = []
    for row in csv.DictReader(io.StringIO(complete)):
        try:
            rows.append(
                Evaluation(
                    int(row["step"]),
                    float(row["wall_time"]),
                    float(row["return_mean"]),
                    float(row["return_std"]),
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return rows


def read_curve(path: Path) -> list[Evaluation]:
    """The evaluations written to `path` so far; none before the file exists."""
    try:
        return parse_curve(path.read_text())
    except FileNotFoundError:
        return []


def time_to_reach(curve: Sequence[Evaluation], threshold: float) -> Evaluation | None:
    """The first evaluation at or above `threshold` (its wall time is the time to reach it);
    None where the curve never gets there."""
    return next((e for e in curve if e.return_mean >= threshold), None)


def _return(e: Evaluation | None) -> str:
    return "-" if e is None else f"{e.return_mean:,.0f}"


def _seconds(e: Evaluation | None) -> str:
    return "-" if e is None else f"{e.wall_time:,.0f}"


def _reached(e: Evaluation | None) -> str:
    return "not reached" if e is None else f"{e.wall_time:,.0f} s (step {e.step:,})"


def curve_rows(ours: Sequence[Evaluation], sbx: Sequence[Evaluation]) -> list[str]:
    """The markdown table of both curves, one row per evaluated step (a step one side did
    not evaluate shows '-' on that side)."""
    by_step = [{e.step: e for e in curve} for curve in (ours, sbx)]
    lines = [
        "| step | our return | our wall s | SBX return | SBX wall s |",
        "|---|---|---|---|---|",
    ]
    for step in sorted(set(by_step[0]) | set(by_step[1])):
        o, s = (rows.get(step) for rows in by_step)
        lines.append(f"| {step:,} | {_return(o)} | {_seconds(o)} | {_return(s)} | {_seconds(s)} |")
    return lines


def reach_rows(
    ours: Sequence[Evaluation], sbx: Sequence[Evaluation], thresholds: Sequence[float]
) -> list[str]:
    """The markdown table of each side's first wall time at or above each threshold."""
    lines = ["| return reached | ours | SBX |", "|---|---|---|"]
    for threshold in thresholds:
        o, s = (time_to_reach(curve, threshold) for curve in (ours, sbx))
        lines.append(f"| {threshold:,.0f} | {_reached(o)} | {_reached(s)} |")
    return lines


def settings_line(settings: dict[str, Any]) -> str:
    """`key value` pairs of a side's settings on one line, in their order."""
    return ", ".join(f"{key} {json.dumps(value, default=str)}" for key, value in settings.items())


def markdown(
    ours: Sequence[Evaluation],
    sbx: Sequence[Evaluation],
    about: dict[str, Any],
    thresholds: Sequence[float] = THRESHOLDS,
) -> str:
    """race.md: the curves, the time to reach each threshold, and what the race ran on.
    `about` holds task, steps, seed, eval_every, eval_episodes, machine, pinning, commit,
    date, command, side_commands, versions and settings (the last two: name -> value)."""
    machine, settings = about["machine"], about["settings"]
    episodes = f"{about['eval_episodes']} episode" + ("s" if about["eval_episodes"] > 1 else "")
    lines = [
        f"# Race: jax_rl against SBX's CrossQ on {about['task']}",
        "",
        f"Evaluation return (mean of {episodes} of the deterministic policy, every "
        f"{about['eval_every']:,} steps) against wall-clock seconds, seed {about['seed']}, "
        f"{about['steps']:,} steps, both trained at once: {about['pinning']}. A side's wall "
        "time counts from the start of its run and includes its set-up, compilation and "
        "evaluations (evaluations pause training on both sides); Python's start-up and "
        "imports are not counted.",
        "",
        *curve_rows(ours, sbx),
        "",
        "Time to reach a return: each side's first evaluation at or above it.",
        "",
        *reach_rows(ours, sbx, thresholds),
        "",
        f"- ours, {TITLES['ours']}: {settings_line(settings['ours'])}",
        f"- SBX, {TITLES['sbx']}: {settings_line(settings['sbx'])}",
        f"- each side's command: {' ; '.join(f'`{c}`' for c in about['side_commands'].values())}",
        f"- machine: {machine['cpu']}, {machine['cores']} cores, JAX {machine['jax']}, "
        f"Python {machine['python']}, accelerator: {machine['accelerator']}",
        f"- versions: {settings_line(about['versions'])}",
        f"- commit {about['commit']}, {about['date']}",
        f"- command: `{about['command']}`",
        "",
        "![return against wall-clock seconds](race.png)",
    ]
    return "\n".join(lines) + "\n"


def progress_line(name: str, curve: Sequence[Evaluation], steps: int) -> str | None:
    """A side's latest evaluation, as the race prints it while it waits; None before one."""
    if not curve:
        return None
    e = curve[-1]
    return (
        f"{name}: step {e.step:,} / {steps:,}, return {e.return_mean:,.0f} at {e.wall_time:,.0f} s"
    )


# --- Checks before anything starts ----------------------------------------------------------


def input_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the flags, in one line; None when the race can start. Numbers
    first, then the task, then SBX: the cheap checks answer before the slow ones."""
    for flag in ("steps", "eval_every", "eval_episodes"):
        if getattr(args, flag) <= 0:
            return f"--{flag} must be a positive integer, not {getattr(args, flag)}"
    if args.poll <= 0:
        return f"--poll must be positive, not {args.poll}"
    if args.seed < 0:
        return f"--seed must be 0 or more, not {args.seed}"
    if args.steps < args.eval_every:
        return f"--steps ({args.steps:,}) must be at least --eval_every ({args.eval_every:,})"
    problem = unknown_task(args.task)
    if problem:
        return problem
    if importlib.util.find_spec("sbx") is None:
        return (
            "sbx is not installed in this Python; run `make race` (it installs the optional "
            "`peers` group into .venv-peers and races from there)"
        )
    return None


def unknown_task(task: str) -> str | None:
    """Why gymnasium does not know `task` (None if it does), without building it: the
    registry's entry is enough, and building a MuJoCo task costs seconds."""
    import gymnasium

    module, _, env_id = task.rpartition(":")
    try:
        if module:  # module:Env-vN, as main_gym.py accepts: the module registers the id
            importlib.import_module(module)
        gymnasium.spec(env_id)
    except (ImportError, gymnasium.error.Error) as e:
        return f"--task {task}: gymnasium does not know it ({e})"
    return None


# --- The SBX side (a child process: `--side sbx`) -------------------------------------------


def sbx_settings(model: Any) -> dict[str, Any]:
    """The settings SBX's CrossQ trained with, read from the model rather than assumed, so
    that a newer SBX with other defaults is recorded as it ran."""
    policy = model.policy
    read = {
        "net_arch_actor": (policy, "net_arch_pi"),
        "net_arch_critic": (policy, "net_arch_qf"),
        "n_critics": (policy, "n_critics"),
        "batch_norm_critic": (policy, "batch_norm"),
        "batch_norm_actor": (policy, "batch_norm_actor"),
        "batch_norm_momentum": (policy, "batch_norm_momentum"),
        "renorm_warmup_steps": (policy, "renorm_warmup_steps"),
        "optimizer_kwargs": (policy, "optimizer_kwargs"),
        "learning_rate": (model, "learning_rate"),
        "qf_learning_rate": (model, "qf_learning_rate"),
        "batch_size": (model, "batch_size"),
        "learning_starts": (model, "learning_starts"),
        "policy_delay": (model, "policy_delay"),
        "buffer_size": (model, "buffer_size"),
        "gamma": (model, "gamma"),
        "train_freq": (model, "train_freq"),
        "gradient_steps": (model, "gradient_steps"),
        "ent_coef": (model, "ent_coef_init"),
        "target_entropy": (model, "target_entropy"),
    }
    found = {name: getattr(owner, attr, None) for name, (owner, attr) in read.items()}
    # JSON-safe: numpy scalars to numbers, named tuples (train_freq) and the rest to text.
    return json.loads(
        json.dumps(found, default=lambda v: v.item() if hasattr(v, "item") else str(v))
    )


def episode_return(model: Any, env: Any) -> float:
    """The undiscounted return of one episode of the model's deterministic policy."""
    obs, _ = env.reset()
    total, done = 0.0, False
    while not done:
        action, _ = model.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        done = terminated or truncated
    return total


class EvaluationLog:
    """evaluations.csv as our logger writes it (6 significant digits, population std), a
    row flushed as soon as it is made: the race reads the file while the side trains."""

    def __init__(self, path: Path, start: float) -> None:
        self.path, self.start = path, start
        path.write_text(",".join(COLUMNS) + "\n")

    def write(self, step: int, returns: Sequence[float]) -> None:
        wall_time = time.perf_counter() - self.start
        mean = sum(returns) / len(returns)
        std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
        with self.path.open("a") as f:
            f.write(",".join([str(step), *(f"{x:.6g}" for x in (wall_time, mean, std))]) + "\n")


def train_sbx(
    task: str, steps: int, seed: int, eval_every: int, episodes: int, save_dir: Path
) -> None:
    """SBX's CrossQ with its defaults on `task`: evaluations.csv and settings.json in
    `save_dir`."""
    import gymnasium
    import sbx
    from stable_baselines3.common.callbacks import BaseCallback

    save_dir.mkdir(parents=True, exist_ok=True)
    log = EvaluationLog(save_dir / "evaluations.csv", start=time.perf_counter())
    env, eval_env = gymnasium.make(task), gymnasium.make(task)
    eval_env.reset(seed=seed + EVAL_SEED_OFFSET)  # later resets continue its stream
    model = sbx.CrossQ("MlpPolicy", env, seed=seed, verbose=0)
    (save_dir / "settings.json").write_text(json.dumps(sbx_settings(model), indent=2))
    evaluated: list[int] = []

    def evaluate(step: int) -> None:
        log.write(step, [episode_return(model, eval_env) for _ in range(episodes)])
        evaluated.append(step)

    class Evaluate(BaseCallback):
        """Pauses training to evaluate: before the first step, then every `eval_every`."""

        def _on_training_start(self) -> None:
            evaluate(0)

        def _on_step(self) -> bool:
            if self.num_timesteps % eval_every == 0:
                evaluate(self.num_timesteps)
            return True

    model.learn(total_timesteps=steps, callback=Evaluate())
    if evaluated[-1] != steps:  # as ours: the end is evaluated too
        evaluate(steps)


# --- The race -------------------------------------------------------------------------------


def cores_for_sides() -> list[int] | None:
    """A core for each side, or None where they must share (fewer than two cores allowed
    to this process, or no `taskset`)."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2 or shutil.which("taskset") is None:
        return None
    return cores[:2]


def side_commands(args: argparse.Namespace, runs_dir: Path) -> dict[str, list[str]]:
    """Each side's command line, before any pinning."""
    common = ["--seed", str(args.seed)]
    return {
        "ours": [
            sys.executable, str(ROOT / "jax_rl" / "main_gym.py"), "--env", args.task,
            "--policy", "TD3", *common, "--max_timesteps", str(args.steps),
            "--eval_freq", str(args.eval_every), "--eval_episodes", str(args.eval_episodes),
            "--save_dir", str(runs_dir / "ours"), "--no_progress", *shlex.split(args.flags),
        ],
        "sbx": [
            sys.executable, "-m", "jax_rl.tools.race", "--side", "sbx", "--task", args.task,
            "--steps", str(args.steps), *common, "--eval_every", str(args.eval_every),
            "--eval_episodes", str(args.eval_episodes), "--save_dir", str(runs_dir / "sbx"),
        ],
    }  # fmt: skip


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop(process: subprocess.Popen) -> None:
    """End a side that is still running (SIGTERM: ours then saves a checkpoint first)."""
    from jax_rl.tools.results import stop_run

    if process.poll() is None:
        stop_run(process, STOP_SECONDS)


def wait_for_an_end(processes: Sequence[subprocess.Popen], seconds: float) -> None:
    """Sleep `seconds`, or less if one of `processes` ends meanwhile: a side that fails at
    once is reported at once, and the race ends when its last side does."""
    running = [p for p in processes if p.poll() is None]
    deadline = time.monotonic() + seconds
    while running and time.monotonic() < deadline and all(p.poll() is None for p in running):
        time.sleep(min(0.5, seconds))


def run_sides(
    commands: dict[str, list[str]], runs_dir: Path, steps: int, poll: float
) -> str | None:
    """Start both sides at once, print each one's newest evaluation as it arrives, wait for
    both; the name of a side that failed (the other is then stopped), else None."""
    processes, logs = {}, {}
    try:
        for name, command in commands.items():
            logs[name] = (runs_dir / f"{name}.log").open("w")
            processes[name] = subprocess.Popen(
                command, cwd=ROOT, stdout=logs[name], stderr=subprocess.STDOUT
            )
        said: dict[str, str | None] = dict.fromkeys(SIDES)
        start = time.perf_counter()
        while True:
            codes = {name: p.poll() for name, p in processes.items()}  # before the reading:
            for name in SIDES:  # a side seen ended has written its last row
                line = progress_line(name, read_curve(runs_dir / name / "evaluations.csv"), steps)
                if line is not None and line != said[name]:
                    print(f"[{time.perf_counter() - start:5.0f} s] {line}", flush=True)
                    said[name] = line
            failed = [name for name, code in codes.items() if code not in (None, 0)]
            if failed:
                return failed[0]
            if all(code == 0 for code in codes.values()):
                return None
            wait_for_an_end(list(processes.values()), poll)
    finally:  # a failure, an interrupt or an error here ends both sides with the race
        for process in processes.values():
            stop(process)
        for log in logs.values():
            log.close()


def commit() -> str:
    """HEAD's short hash, marked where the work tree differs from it."""

    def git(*words: str) -> str:
        try:
            done = subprocess.run(["git", *words], cwd=ROOT, capture_output=True, text=True)
        except OSError:  # no git here
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return f"{head} (with uncommitted changes)" if git("status", "--porcelain") else head


def versions() -> dict[str, str]:
    found = {}
    for name in ("jax", "sbx", "stable_baselines3", "gymnasium", "mujoco"):
        try:
            found[name] = importlib.import_module(name).__version__
        except (ImportError, AttributeError):
            continue
    return found


def plot(ours: Sequence[Evaluation], sbx: Sequence[Evaluation], task: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, curve in (("ours", ours), ("sbx", sbx)):
        ax.plot([e.wall_time for e in curve], [e.return_mean for e in curve], "o-", ms=3,
                label=TITLES[name])  # fmt: skip
    ax.set_xlabel("wall-clock seconds (compilation and evaluations included)")
    ax.set_ylabel("evaluation return")
    ax.set_title(f"{task}: return against wall-clock time")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def race(args: argparse.Namespace, argv: Sequence[str]) -> int:
    runs_dir = Path(args.runs_dir).absolute()  # the sides run in the repository's root
    runs_dir.mkdir(parents=True, exist_ok=True)
    for name in SIDES:  # a new race: each side's folder from the last one goes
        shutil.rmtree(runs_dir / name, ignore_errors=True)
    commands = side_commands(args, runs_dir)
    cores = cores_for_sides()
    if cores is None:
        pinning = "both sides share this process's cores (fewer than two, or no taskset)"
        print(f"note: {pinning}", file=sys.stderr)
    else:
        pinning = f"ours pinned to core {cores[0]}, SBX to core {cores[1]} (taskset -c)"
        for core, name in zip(cores, SIDES, strict=True):
            commands[name] = ["taskset", "-c", str(core), *commands[name]]
    print(f"race: {pinning}; logs in {runs_dir}/{{ours,sbx}}.log", flush=True)
    # A race stopped by SIGTERM stops its sides too (run_sides' `finally`), as Ctrl-C does.
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        failed = run_sides(commands, runs_dir, args.steps, args.poll)
    finally:
        signal.signal(signal.SIGTERM, previous)
    curves = {name: read_curve(runs_dir / name / "evaluations.csv") for name in SIDES}
    if failed is None:
        failed = next((name for name in SIDES if not curves[name]), None)
    if failed is not None:
        log = runs_dir / f"{failed}.log"
        print(f"error: the {failed} side failed; the end of {log}:", file=sys.stderr)
        print(log_tail(log), file=sys.stderr)
        return 1

    from jax_rl.tools.benchmark import machine

    config = json.loads((runs_dir / "ours" / "config.json").read_text())
    about = {
        "task": args.task,
        "steps": args.steps,
        "seed": args.seed,
        "eval_every": args.eval_every,
        "eval_episodes": args.eval_episodes,
        "machine": machine(),
        "pinning": pinning,
        "commit": commit(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": shlex.join(["python", "-m", "jax_rl.tools.race", *argv]),
        "side_commands": {name: shlex.join(c) for name, c in commands.items()},
        "versions": versions(),
        "settings": {
            "ours": ours_settings(config),
            "sbx": json.loads((runs_dir / "sbx" / "settings.json").read_text()),
        },
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(curves["ours"], curves["sbx"], about)
    (out / "race.md").write_text(text)
    record = {**about, "ours_config": config, "thresholds": list(THRESHOLDS)}
    record["curves"] = {name: [e._asdict() for e in curve] for name, curve in curves.items()}
    (out / "race.json").write_text(json.dumps(record, indent=2))
    plot(curves["ours"], curves["sbx"], args.task, out / "race.png")
    print(text)
    print(f"wrote {out}/race.md, race.json, race.png")
    return 0


def ours_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The settings of our run that race.md shows, from its config.json (race.json keeps
    all of it): the preset and what it changed, the flags, the network and the warm-up."""
    preset = config.get("preset") or {}
    loop, algo = config.get("loop", {}), config.get("algo", {})
    return {
        "preset": preset.get("name"),
        "preset_applied": preset.get("applied", {}),
        "flags": config.get("flags", {}),
        "hidden_sizes": algo.get("hidden_sizes"),
        "batch_size": loop.get("batch_size"),
        "start_timesteps": loop.get("start_timesteps"),
    }


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--task", default=DEFAULT_TASK, help="a Gymnasium task id (default %(default)s)"
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=FULL_STEPS,
        help="environment steps a side (default %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="both sides' seed (default %(default)s)"
    )
    parser.add_argument(
        "--eval_every",
        type=int,
        default=5000,
        help="steps between evaluations (default %(default)s)",
    )
    parser.add_argument(
        "--eval_episodes",
        type=int,
        default=10,
        help="episodes per evaluation (default %(default)s)",
    )
    parser.add_argument(
        "--flags", default="", help="more flags for our side (main_gym.py's), e.g. '--preset tuned'"
    )
    parser.add_argument(
        "--out",
        default=None,
        help="folder for race.md/.json/.png (default docs/benchmarks for a race of the "
        f"default task and {FULL_STEPS:,} steps or more, else a temporary folder)",
    )
    parser.add_argument(
        "--runs_dir",
        default="runs/race",
        help="folder for each side's run and log (default %(default)s; the ours/ and sbx/ of a "
        "race before are removed)",
    )
    parser.add_argument(
        "--poll",
        type=float,
        default=POLL_SECONDS,
        help="seconds between progress lines (default %(default)s)",
    )
    parser.add_argument(
        "--side",
        choices=("race", "sbx"),
        default="race",
        help="sbx: train SBX's side alone into --save_dir (the race starts it so)",
    )
    parser.add_argument("--save_dir", default=None, help="with --side sbx: its output folder")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    problem = input_problem(args)
    if problem is None and args.side == "sbx" and args.save_dir is None:
        problem = "--side sbx needs --save_dir"
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.side == "sbx":
        train_sbx(
            args.task, args.steps, args.seed, args.eval_every, args.eval_episodes,
            Path(args.save_dir),
        )  # fmt: skip
        return 0
    if args.out is None:  # a reduced race never replaces the committed one
        full = args.steps >= FULL_STEPS and args.task == DEFAULT_TASK
        from jax_rl.io.logger import scratch_folder

        args.out = "docs/benchmarks" if full else str(scratch_folder("race", "a reduced race"))
    return race(args, argv)


if __name__ == "__main__":
    from jax_rl.io import quiet

    quiet.install()  # as the entry points do: no settotalmass warning from MuJoCo's loader
    sys.exit(main())
