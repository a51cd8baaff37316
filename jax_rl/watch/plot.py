"""Learning curves from runs' evaluations.csv files.

    python -m jax_rl.watch.plot docs/results/cartpole_swingup --out curves.png

    python -m jax_rl.watch.plot runs/brax-SAC-halfcheetah-10agents-seed0 --out sweep.png

Every folder under the given roots that holds an evaluations.csv is a run;
runs are grouped by the part of the folder name before `-seed` (for example
`SAC-seed0`, `SAC-seed1` -> `SAC`; the agents of a population run are named
`<policy>[-<setting>]-seed<seed>`, so each hyperparameter setting is one
group). Each group is drawn as the mean over its seeds with a band: by default
the 95% confidence interval of that mean (Student's t, from the seeds' spread),
or with `--band range` from the lowest to the highest seed. The final mean is
printed.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np


def read_curve(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with path.open() as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path} has no rows")
    steps = np.array([int(r["step"]) for r in rows])
    returns = np.array([float(r["return_mean"]) for r in rows])
    return steps, returns


def group_runs(roots: list[Path]) -> dict[str, list[Path]]:
    groups: dict[str, list[Path]] = defaultdict(list)
    for root in roots:
        for path in sorted(root.rglob("evaluations.csv")):
            name = re.sub(r"-seed\d+$", "", path.parent.name)
            groups[name].append(path)
    return dict(groups)


def confidence_halfwidth(returns: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Half-width of the t confidence interval of the mean over axis 0 (seeds).

    Zero with a single seed (no spread to estimate from).
    """
    n = returns.shape[0]
    if n < 2:
        return np.zeros(returns.shape[1:])
    from scipy import stats

    t = stats.t.ppf(0.5 + level / 2, df=n - 1)
    return t * returns.std(0, ddof=1) / np.sqrt(n)


def summarise(groups: dict[str, list[Path]]) -> dict[str, dict[str, np.ndarray]]:
    """Per group: the steps every seed reached, and mean/min/max/CI of the return there."""
    out = {}
    for name, paths in groups.items():
        curves = [read_curve(p) for p in paths]
        length = min(len(steps) for steps, _ in curves)
        steps = curves[0][0][:length]
        returns = np.stack([r[:length] for _, r in curves])
        out[name] = {
            "steps": steps,
            "mean": returns.mean(0),
            "min": returns.min(0),
            "max": returns.max(0),
            "ci95": confidence_halfwidth(returns),
            "final": returns[:, -1],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", type=Path, help="folders that hold runs")
    parser.add_argument("--out", type=Path, required=True, help="image file to write (.png, .svg)")
    parser.add_argument("--title", default="", help="figure title")
    parser.add_argument(
        "--band",
        choices=("ci95", "range"),
        default="ci95",
        help="shaded band: 95%% confidence interval of the mean over seeds, or min-max",
    )
    args = parser.parse_args(argv)
    groups = group_runs(args.roots)
    if not groups:
        print(f"error: no evaluations.csv under {', '.join(map(str, args.roots))}", file=sys.stderr)
        return 2

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for name, curve in sorted(summarise(groups).items()):
        seeds = len(curve["final"])
        ax.plot(curve["steps"], curve["mean"], label=f"{name} ({seeds} seeds)")
        if args.band == "range":
            low, high = curve["min"], curve["max"]
        else:
            low, high = curve["mean"] - curve["ci95"], curve["mean"] + curve["ci95"]
        ax.fill_between(curve["steps"], low, high, alpha=0.2)
        finals = ", ".join(f"{v:.0f}" for v in curve["final"])
        print(
            f"{name}: final return mean {curve['final'].mean():.1f} "
            f"+- {curve['ci95'][-1]:.1f} (95% CI; per seed: {finals}) at step {curve['steps'][-1]}"
        )
    ax.set_xlabel("environment steps")
    ax.set_ylabel("eval return (deterministic policy)")
    band = "95% CI of the mean" if args.band == "ci95" else "min-max over seeds"
    ax.set_title(f"{args.title}\n(band: {band})" if args.title else f"band: {band}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
