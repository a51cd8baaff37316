"""Aggregates over tasks, with intervals, from rliable (Agarwal et al., "Deep Reinforcement
Learning at the Edge of the Statistical Precipice", NeurIPS 2021).

    python -m jax_rl.tools.aggregates docs/results/dmc28
    python -m jax_rl.tools.aggregates docs/results/gym200k --out gym_profiles.png
    python -m jax_rl.tools.aggregates crossq=runs/a plain=runs/b --improvement crossq,plain

Each argument is a table's results folder (<task>/<learner>/<agent>/evaluations.csv), a run
folder, or any folder above runs; `LABEL=PATH` names the learner of every run under PATH
(else each run's config.json names its policy and task). A run's score is its final
evaluation return (the last row of its evaluations.csv), normalised (`NORMALISATIONS`):
dm_control's returns / 1000; Gymnasium's / Tianshou SAC's published mean at 200k steps on
the task. Each learner's scores form a [runs x tasks] matrix over the tasks every learner has;
rliable wants it rectangular, so a learner whose cells hold different numbers of seeds keeps
the first n seeds of each, n the fewest any of its cells has (printed). Per learner: the
interquartile mean, mean, median and optimality gap, each with its 95% stratified-bootstrap
interval (rliable's `library.get_interval_estimates`: seeds resampled within each task);
the probability of improvement of one learner over another; `--out` draws the performance
profiles (rliable's `create_performance_profile` and `plot_utils`). No statistics of our own:
every figure is rliable's function. The bootstrap is seeded (`--seed`), so a table made twice
reads the same. docs/aggregates.md says what each figure is and what is not comparable.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
from rliable import library, metrics, plot_utils

from jax_rl.run import cluster
from jax_rl.tools import published
from jax_rl.watch import plot

REPS = 2000  # bootstrap resamples: rliable's choice for its profiles and improvement figures
SEED = 0
CONFIDENCE = 0.95
METRICS = ("IQM", "mean", "median", "optimality gap")
PROFILE_POINTS = 101  # thresholds tau from 0 to the highest score


@dataclasses.dataclass(frozen=True)
class Normalisation:
    """How a task's return becomes a score: divided by the return that scores 1."""

    name: str
    description: str  # what a score of 1 is, for the table and the printout
    divisor: Callable[[str], float | None]  # task -> the return scoring 1; None: not known
    short: str  # the same in a figure's axis label


def tianshou_sac_200k(task: str) -> float | None:
    """Tianshou SAC's published mean return at 200k steps on `task` (the gym table's column)."""
    (sac,) = [ref for ref in published.TIANSHOU_200K if ref.column == "Tianshou SAC"]
    figure = sac.values.get(task)
    return figure[0] if figure else None


NORMALISATIONS = {
    "dmc": Normalisation(
        "dmc",
        "return / 1000 (dm_control's rewards lie in [0, 1] per step over 1000-step episodes)",
        lambda task: 1000.0,
        "return / 1000",
    ),
    "gym": Normalisation(
        "gym",
        "return / Tianshou SAC's published mean return at 200k steps on the task (Tianshou's "
        "MuJoCo benchmark, Gym v3, 10 seeds: the gym table's column); nothing is subtracted, "
        "so 0 is a return of 0, not a random policy's",
        tianshou_sac_200k,
        "return / Tianshou SAC's at 200k",
    ),
    "raw": Normalisation("raw", "the return itself (not normalised)", lambda task: 1.0, "return"),
}


def pick_normalisation(name: str, tasks: Sequence[str]) -> Normalisation:
    """The normalisation called `name`; "auto": "gym" where every task is a Gymnasium id
    (Name-vN), "dmc" where none is. ValueError where none fits."""
    if name == "auto":
        versioned = [bool(re.search(r"-v\d+$", task)) for task in tasks]
        if all(versioned):
            name = "gym"
        elif not any(versioned):
            name = "dmc"
        else:
            raise ValueError(
                "the tasks mix Gymnasium ids and others: name a normalisation with --normalise"
            )
    if name not in NORMALISATIONS:
        raise ValueError(
            f"unknown normalisation {name!r}: choose from auto, {', '.join(NORMALISATIONS)}"
        )
    return NORMALISATIONS[name]


@dataclasses.dataclass(frozen=True)
class ScoreMatrix:
    """One learner's normalised final scores, rectangular as rliable wants them."""

    learner: str
    tasks: tuple[str, ...]
    scores: np.ndarray  # (runs, tasks): the first `runs` seeds of every task
    seeds_per_task: tuple[int, ...]  # each task's seeds before the fewest were kept

    @property
    def runs(self) -> int:
        return int(self.scores.shape[0])

    def shape_text(self) -> str:
        """ "3 x 28", or "3 x 28 (the first 3 of 3-5 seeds per task)" where cells differ."""
        text = f"{self.runs} x {len(self.tasks)}"
        most = max(self.seeds_per_task)
        if most > self.runs:
            text += f" (the first {self.runs} of {self.runs}-{most} seeds per task)"
        return text


def score_matrix(
    learner: str,
    finals: Mapping[str, Sequence[float]],
    tasks: Sequence[str],
    normalisation: Normalisation,
) -> ScoreMatrix:
    """`learner`'s [runs x tasks] matrix from `finals` (task -> each seed's final return, in
    seed order): each return over its task's divisor, the first n seeds of every task, n the
    fewest any task has. ValueError for a task without runs or without a divisor."""
    columns, counts = [], []
    for task in tasks:
        returns = list(finals.get(task, ()))
        if not returns:
            raise ValueError(f"{learner} has no runs on {task}")
        divisor = normalisation.divisor(task)
        if divisor is None:
            raise ValueError(
                f"the {normalisation.name} normalisation has no reference score for {task}"
            )
        columns.append(np.asarray(returns, dtype=float) / divisor)
        counts.append(len(returns))
    runs = min(counts)
    scores = np.stack([column[:runs] for column in columns], axis=1)
    return ScoreMatrix(learner, tuple(tasks), scores, tuple(counts))


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A point estimate and its interval."""

    point: float
    low: float
    high: float

    def text(self) -> str:
        return f"{self.point:.2f} [{self.low:.2f}, {self.high:.2f}]"


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """numpy's global generator seeded with `seed`, restored after. rliable 1.2 draws its
    resampled seeds from the global generator (its `random_state` reaches arch, not the
    indices it draws), so a fixed seed here is what makes an interval reproducible."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def four_aggregates(scores: np.ndarray) -> np.ndarray:
    """rliable's IQM, mean, median and optimality gap (below 1) of a (runs, tasks) matrix."""
    return np.array(
        [
            metrics.aggregate_iqm(scores),
            metrics.aggregate_mean(scores),
            metrics.aggregate_median(scores),
            metrics.aggregate_optimality_gap(scores, gamma=1.0),
        ]
    )


def aggregates(scores: np.ndarray, reps: int = REPS, seed: int = SEED) -> dict[str, Estimate]:
    """`METRICS` of one learner's (runs, tasks) matrix, each with its stratified-bootstrap
    interval. Seeded per learner, so that its intervals do not depend on who else is in
    the table."""
    with seeded(seed):
        points, intervals = library.get_interval_estimates(
            {"scores": scores}, four_aggregates, reps=reps, confidence_interval_size=CONFIDENCE
        )
    point, (low, high) = points["scores"], intervals["scores"]
    return {
        name: Estimate(float(point[i]), float(low[i]), float(high[i]))
        for i, name in enumerate(METRICS)
    }


def mean_of_means(scores: np.ndarray) -> float:
    """rliable's mean of the tasks' mean scores, for a column of published means (1, tasks)."""
    return float(metrics.aggregate_mean(scores))


def improvement(x: np.ndarray, y: np.ndarray, reps: int = REPS, seed: int = SEED) -> Estimate:
    """P(X > Y): the probability that a run of X scores above a run of Y on the same task
    (ties count half), averaged over the tasks (rliable's `probability_of_improvement`),
    with its interval from resampling each learner's runs within each task. `x` and `y`
    are (runs, tasks) matrices over the same tasks; their runs may differ in number."""
    with seeded(seed):
        points, intervals = library.get_interval_estimates(
            {"x over y": [x, y]},
            metrics.probability_of_improvement,
            reps=reps,
            confidence_interval_size=CONFIDENCE,
        )
    low, high = np.ravel(intervals["x over y"])
    return Estimate(float(points["x over y"]), float(low), float(high))


@dataclasses.dataclass(frozen=True)
class Profile:
    """A performance profile: at each threshold tau, the fraction of runs scoring above it."""

    taus: np.ndarray  # (T,)
    fraction: np.ndarray  # (T,)
    low: np.ndarray  # (T,) the 95% interval's bounds
    high: np.ndarray


def profile(scores: np.ndarray, taus: np.ndarray, reps: int = REPS, seed: int = SEED) -> Profile:
    """One learner's score distribution over all its runs and tasks (rliable's
    `create_performance_profile`), with stratified-bootstrap bands."""
    with seeded(seed):
        fractions, bands = library.create_performance_profile(
            {"scores": scores}, taus, reps=reps, confidence_interval_size=CONFIDENCE
        )
    low, high = bands["scores"]
    return Profile(taus, np.asarray(fractions["scores"]), np.asarray(low), np.asarray(high))


def profile_taus(matrices: Sequence[ScoreMatrix]) -> np.ndarray:
    """The thresholds a profile figure is drawn at: 0 to the highest score, at least 1."""
    top = max([1.0, *(float(np.max(m.scores)) for m in matrices)])
    return np.linspace(0.0, top, PROFILE_POINTS)


def plot_profiles(
    matrices: Sequence[ScoreMatrix],
    path: Path,
    title: str,
    xlabel: str,
    reps: int = REPS,
    seed: int = SEED,
    colors: Mapping[str, str] | None = None,
    linestyles: Mapping[str, str] | None = None,
) -> Path:
    """`path`: the performance profiles of `matrices`, each learner's line with its band
    (rliable's `plot_utils.plot_performance_profiles`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    taus = profile_taus(matrices)
    profiles = {m.learner: profile(m.scores, taus, reps, seed) for m in matrices}
    labels = {m.learner: f"{m.learner} ({m.runs} x {len(m.tasks)})" for m in matrices}
    palette = {m.learner: f"C{i}" for i, m in enumerate(matrices)}
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    plot_utils.plot_performance_profiles(
        {labels[k]: p.fraction for k, p in profiles.items()},
        taus,
        performance_profile_cis={labels[k]: (p.low, p.high) for k, p in profiles.items()},
        ax=ax,
        colors={labels[k]: (colors or palette).get(k, palette[k]) for k in profiles},
        linestyles={labels[k]: (linestyles or {}).get(k, "solid") for k in profiles},
        xlabel=xlabel,
        ylabel=r"fraction of runs with score $> \tau$",
        labelsize="medium",
        ticklabelsize="medium",
    )
    ax.legend(fontsize=9, loc="upper right")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


# --- Reading runs -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Run:
    """One agent's final evaluation."""

    learner: str
    task: str
    seed: int
    final: float  # the return in the last row of its evaluations.csv
    step: int  # that row's step
    path: Path  # its evaluations.csv


def seed_of(agent: Path, fallback: int) -> int:
    """The seed in an agent folder's name ("TD3-seed2" -> 2), else `fallback`."""
    match = re.search(r"seed(\d+)$", agent.name)
    return int(match.group(1)) if match else fallback


def cell_of(csv: Path, root: Path) -> tuple[str, str] | None:
    """(learner, task) of the run that wrote `csv`: from the nearest config.json at or above
    its folder (inside `root`) that names a policy and a task, else from a table's layout
    (<task>/<learner>/<agent>/evaluations.csv); None where neither tells."""
    for folder in [csv.parent, *csv.parent.parents]:
        config = folder / "config.json"
        if config.exists():
            data = json.loads(config.read_text())
            if "policy" in data and "env" in data:
                return data["policy"], data["env"]
            if "policy" in data and "domain_name" in data and "task_name" in data:
                return data["policy"], f"{data['domain_name']}-{data['task_name']}"
        if folder == root:
            break
    parts = csv.relative_to(root).parts
    if len(parts) >= 4:  # <task>/<learner>/<agent>/evaluations.csv, the table's layout
        return parts[-3], parts[-4]
    return None


def read_runs(source: str) -> list[Run]:
    """The runs under one argument: PATH or LABEL=PATH (LABEL names their learner).
    ValueError where PATH holds none, or a run whose task is not known."""
    label, _, where = source.rpartition("=") if "=" in source else ("", "", source)
    root = Path(where)
    if not root.exists():
        raise ValueError(f"{root}: no such file or folder")
    paths = sorted(
        p for p in root.rglob("evaluations.csv") if "checkpoints" not in p.relative_to(root).parts
    )
    runs = []
    for i, path in enumerate(paths):
        cell = cell_of(path, root)
        if cell is None:
            raise ValueError(
                f"{path}: no config.json names its policy and task, and it is not in a "
                "table's <task>/<learner>/<agent>/ layout"
            )
        try:
            steps, returns = plot.read_curve(path)
        except (KeyError, ValueError):  # no rows, or not step and return_mean columns
            raise ValueError(f"{path}: not a run's evaluations (step, return_mean)") from None
        learner, task = cell
        seed = seed_of(path.parent, i)
        runs.append(Run(label or learner, task, seed, float(returns[-1]), int(steps[-1]), path))
    if not runs:
        raise ValueError(f"{root}: no evaluations.csv under it (no runs)")
    return runs


def finals_by_learner(runs: Sequence[Run]) -> dict[str, dict[str, list[float]]]:
    """learner -> task -> final returns in seed order, learners in the order first met; a
    run read twice (two arguments over one folder) counts once."""
    unique = {run.path.resolve(): run for run in runs}.values()
    table: dict[str, dict[str, list[Run]]] = {}
    for run in unique:
        table.setdefault(run.learner, {}).setdefault(run.task, []).append(run)
    return {
        learner: {
            task: [r.final for r in sorted(cell, key=lambda r: (r.seed, str(r.path)))]
            for task, cell in sorted(cells.items())
        }
        for learner, cells in table.items()
    }


# --- The command line ---------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "sources",
        nargs="+",
        metavar="RUN_OR_TABLE_DIR",
        help="results folders or runs; LABEL=PATH names the learner of every run under PATH",
    )
    parser.add_argument(
        "--normalise",
        default="auto",
        help="dmc (return / 1000), gym (return / Tianshou SAC's mean at 200k), raw, or auto "
        "(the default): gym where every task is a Gymnasium id (Name-vN), dmc where none is",
    )
    parser.add_argument(
        "--reps", type=int, default=REPS, help=f"bootstrap resamples (default {REPS})"
    )
    parser.add_argument(
        "--seed", type=int, default=SEED, help=f"numpy seed of the bootstrap (default {SEED})"
    )
    parser.add_argument(
        "--improvement",
        action="append",
        default=None,
        metavar="X,Y",
        help="print P(X > Y) for learners X and Y (repeatable; default: the first learner "
        "over each other one)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="draw the performance profiles into this PNG"
    )
    args = parser.parse_args(argv)
    if args.reps < 1:
        cluster.fail(f"--reps must be positive, got {args.reps}")
    return args


def report_lines(
    matrices: Sequence[ScoreMatrix], estimates: Mapping[str, Mapping[str, Estimate]]
) -> list[str]:
    """One line per learner: its matrix's shape and the four aggregates with intervals."""
    width = max(len("learner"), *(len(m.learner) for m in matrices))
    header = f"{'learner':<{width}}  {'runs x tasks':<12}  " + "  ".join(
        f"{name:<18}" for name in METRICS
    )
    lines = [header.rstrip()]
    for m in matrices:
        figures = "  ".join(f"{estimates[m.learner][name].text():<18}" for name in METRICS)
        lines.append(f"{m.learner:<{width}}  {m.shape_text():<12}  {figures}".rstrip())
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        runs = [run for source in args.sources for run in read_runs(source)]
        table = finals_by_learner(runs)
        tasks = sorted(set.intersection(*(set(cells) for cells in table.values())))
        if not tasks:
            raise ValueError("the learners share no task: nothing to aggregate over")
        normalisation = pick_normalisation(args.normalise, tasks)
        matrices = [
            score_matrix(learner, cells, tasks, normalisation) for learner, cells in table.items()
        ]
        pairs = [tuple(p.split(",")) for p in args.improvement or []] or [
            (matrices[0].learner, m.learner) for m in matrices[1:]
        ]
        known = {m.learner: m for m in matrices}
        for pair in pairs:
            if len(pair) != 2 or not set(pair) <= set(known):
                raise ValueError(
                    f"--improvement {','.join(pair)}: name two of {', '.join(known)} as X,Y"
                )
    except ValueError as problem:
        cluster.fail(str(problem))
    left_out = sorted({t for cells in table.values() for t in cells} - set(tasks))
    steps = sorted({run.step for run in runs})
    print(f"normalisation: {normalisation.name}, {normalisation.description}")
    print(
        f"tasks: {len(tasks)} every learner has"
        + (f" (left out, not every learner's: {', '.join(left_out)})" if left_out else "")
    )
    at = f"{steps[0]:,}" if len(steps) == 1 else f"{steps[0]:,} to {steps[-1]:,} (they differ)"
    print(f"final evaluations at step {at}")
    print(
        f"95% stratified-bootstrap intervals: {args.reps} resamples, numpy seed {args.seed} "
        "(rliable)"
    )
    estimates = {m.learner: aggregates(m.scores, args.reps, args.seed) for m in matrices}
    print()
    print("\n".join(report_lines(matrices, estimates)))
    for x, y in pairs:
        chance = improvement(known[x].scores, known[y].scores, args.reps, args.seed)
        print(f"P({x} > {y}) = {chance.text()}")
    if args.out is not None:
        plot_profiles(
            matrices, args.out, f"performance profiles over {len(tasks)} tasks",
            rf"score $\tau$ ({normalisation.short})", args.reps, args.seed,
        )  # fmt: skip
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
