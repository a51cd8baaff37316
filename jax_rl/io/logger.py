"""Run output: CSV files of evaluations and training metrics, and a progress bar
(for one agent, `RunLogger`, or a population trained together, `PopulationLogger`);
the same scalars, the config and videos go to any trackers (`jax_rl.io.trackers`)."""

from __future__ import annotations

import csv
import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

if TYPE_CHECKING:
    from jax_rl.io.trackers import Sink


class CSVLog:
    """Appends rows (dicts) to a CSV file; the first row fixes the columns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fields: list[str] | None = None

    def truncate_after(self, step: int) -> list[dict[str, str]]:
        """Drop rows written after `step` (work a resumed run redoes); return the rest."""
        if not self.path.exists():
            return []
        with self.path.open(newline="") as f:
            reader = csv.DictReader(f)
            fields = reader.fieldnames
            rows = [r for r in reader if int(r["step"]) <= step]
        if fields is None:
            return []
        with self.path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
        self._fields = list(fields)
        return rows

    def write(self, row: Mapping[str, Any]) -> None:
        new_file = self._fields is None
        if self._fields is None:
            self._fields = list(row)
        with self.path.open("w" if new_file else "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self._fields, extrasaction="ignore")
            if new_file:
                writer.writeheader()
            writer.writerow({k: _plain(v) for k, v in row.items()})


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


class RunLogger:
    """The files of one run under `save_dir`, plus a progress bar on stderr.

    evaluations.csv: step, wall_time, return_mean, return_std, one row per evaluation.
    train.csv: step, wall_time, the learner's metrics averaged since the last
    row, and the return of the latest finished training episode.
    `sinks` (TensorBoard, W&B: `jax_rl.io.trackers`) get the same values, as tagged
    scalars, and the run's config and videos.
    """

    def __init__(
        self,
        save_dir: Path,
        total_steps: int,
        progress: bool = True,
        sinks: Sequence[Sink] = (),
    ) -> None:
        self.save_dir = Path(save_dir)
        self.sinks = list(sinks)
        self._last_row: tuple[int, float] | None = None  # (step, wall_time): last train row
        self.save_dir.mkdir(parents=True, exist_ok=True)
        self.evaluations = CSVLog(self.save_dir / "evaluations.csv")
        self.train = CSVLog(self.save_dir / "train.csv")
        self._start = time.perf_counter()
        self._bar = tqdm(
            total=total_steps,
            disable=not progress,
            unit="step",
            dynamic_ncols=True,
            mininterval=1.0,
            file=sys.stderr,
        )
        self._postfix: dict[str, str] = {}

    @property
    def wall_time(self) -> float:
        return time.perf_counter() - self._start

    def resume(self, step: int, wall_time: float) -> list[dict[str, float]]:
        """Continue the logs of a run resumed at `step`, whose clock then read `wall_time`.

        Rows written after the checkpoint are dropped (the resumed run writes
        them again); returns the evaluation rows kept.
        """
        self._start = time.perf_counter() - wall_time
        self._last_row = None
        for sink in self.sinks:
            sink.resumed(step)
        self.train.truncate_after(step)
        kept = self.evaluations.truncate_after(step)
        self.advance_to(step)
        return [{k: int(v) if k == "step" else float(v) for k, v in row.items()} for row in kept]

    def write_config(self, config: Mapping[str, Any]) -> None:
        with (self.save_dir / "config.json").open("w") as f:
            json.dump(config, f, indent=2, default=str)
        for sink in self.sinks:
            sink.config(config)

    def advance(self, steps: int) -> None:
        self._bar.update(steps)

    def advance_to(self, step: int) -> None:
        """Move the progress bar to `step` steps done."""
        self._bar.update(step - self._bar.n)

    def log_evaluation(self, step: int, returns: list[float]) -> dict[str, float]:
        mean = sum(returns) / len(returns)
        std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
        row = {"step": step, "wall_time": self.wall_time, "return_mean": mean, "return_std": std}
        self.evaluations.write(row)
        for sink in self.sinks:
            sink.scalars(step, {"eval/return_mean": mean, "eval/return_std": std})
        self.set_status(eval_return=f"{mean:.1f}")
        return row

    def log_train(self, step: int, metrics: Mapping[str, float]) -> None:
        wall_time = self.wall_time
        self.train.write({"step": step, "wall_time": wall_time, **metrics})
        if self.sinks:
            scalars = {_tag(name): float(value) for name, value in metrics.items()}
            if self._last_row is not None and wall_time > self._last_row[1]:
                last_step, last_time = self._last_row
                scalars["perf/steps_per_s"] = (step - last_step) / (wall_time - last_time)
            for sink in self.sinks:
                sink.scalars(step, scalars)
        self._last_row = (step, wall_time)
        # NaN until the first episode ends: show nothing rather than a diverged-looking nan
        if math.isfinite(metrics.get("episode_return", math.nan)):
            self.set_status(train_return=f"{metrics['episode_return']:.1f}")

    def log_video(self, step: int, path: Path, episode_return: float) -> None:
        """A video of the agent at `step` (written in videos/) for the trackers."""
        for sink in self.sinks:
            sink.video(step, path, episode_return)

    def message(self, text: str) -> None:
        self._bar.write(text, file=sys.stderr)

    def close(self) -> None:
        self._bar.close()
        for sink in self.sinks:
            sink.close()

    def set_status(self, **items: str) -> None:
        """Show `name=value` items after the progress bar (kept until replaced)."""
        self._postfix.update(items)
        self._bar.set_postfix(self._postfix, refresh=False)


class PopulationLogger:
    """The logs of P agents trained together: one RunLogger per agent, one progress bar.

    With one agent its RunLogger is the whole thing (files in its folder, its
    bar). With several, each agent writes evaluations.csv and train.csv in its
    own folder and the bar of `top` (the run's folder) shows the population's
    mean, spread and range of the latest evaluation.
    """

    def __init__(self, agents: Sequence[RunLogger], top: RunLogger | None = None) -> None:
        if not agents:
            raise ValueError("a population needs at least one agent")
        if top is None and len(agents) > 1:
            raise ValueError("several agents need a top-level logger for the progress bar")
        self.agents = list(agents)
        self.top = top if top is not None else agents[0]

    @classmethod
    def create(
        cls,
        save_dir: Path,
        agent_dirs: Sequence[Path],
        total_steps: int,
        progress: bool = True,
        trackers: Sequence[str] = (),
        resume: bool = False,
    ) -> PopulationLogger:
        """The loggers of a run; `trackers` (`--logger`'s names) log one run per agent,
        named by its folder (grouped by the run's folder, for a population)."""
        from jax_rl.io.trackers import make_sinks

        save_dir = Path(save_dir)
        if len(agent_dirs) == 1 and Path(agent_dirs[0]) == save_dir:
            sinks = make_sinks(trackers, save_dir, save_dir.name, None, resume)
            return cls([RunLogger(save_dir, total_steps, progress, sinks)])
        top = RunLogger(save_dir, total_steps, progress)
        agents = [
            RunLogger(
                d, total_steps, False, make_sinks(trackers, d, Path(d).name, save_dir.name, resume)
            )
            for d in agent_dirs
        ]
        return cls(agents, top)

    @property
    def wall_time(self) -> float:
        return self.top.wall_time

    def resume(self, step: int, wall_time: float) -> list[list[dict[str, float]]]:
        """Each agent's kept evaluation rows (see `RunLogger.resume`)."""
        kept = [agent.resume(step, wall_time) for agent in self.agents]
        if self.top not in self.agents:
            self.top.resume(step, wall_time)
        return kept

    def advance_to(self, step: int) -> None:
        self.top.advance_to(step)

    def set_status(self, **items: str) -> None:
        self.top.set_status(**items)

    def message(self, text: str) -> None:
        self.top.message(text)

    def log_train(self, step: int, rows: Sequence[Mapping[str, float]]) -> None:
        for agent, row in zip(self.agents, rows, strict=True):
            agent.log_train(step, row)
        returns = [r.get("episode_return", math.nan) for r in rows]
        if self.top not in self.agents and any(math.isfinite(v) for v in returns):
            self.set_status(train_return=_spread(returns))

    def log_evaluation(
        self, step: int, returns: Sequence[Sequence[float]]
    ) -> list[dict[str, float]]:
        """Write each agent's evaluation row (returns[i]: agent i's episode returns)."""
        rows = [
            agent.log_evaluation(step, list(r))
            for agent, r in zip(self.agents, returns, strict=True)
        ]
        if self.top not in self.agents:
            self.set_status(eval_return=_spread([row["return_mean"] for row in rows]))
        return rows

    def close(self) -> None:
        for agent in self.agents:
            agent.close()
        if self.top not in self.agents:
            self.top.close()


def scratch_folder(what: str, why: str) -> Path:
    """A fresh temporary folder for the outputs of a reduced-size run (`--quick`, `--tiny`,
    fewer steps than the table's), announced on stderr: the committed tables under docs/
    are written only by full-size runs or where --out says."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix=f"jax_rl-{what}-"))
    print(f"{why}: writing to {folder} (give --out to choose)", file=sys.stderr)
    return folder


def _tag(name: str) -> str:
    """A tracker's tag for a train.csv column: the learner's metrics keep their own
    (`loss/critic`), the loop's columns go under `train/`."""
    return name if "/" in name else f"train/{name}"


def _spread(values: Sequence[float]) -> str:
    """`mean+-std [min, max]` over the finite values (what the population bar shows); a dash
    where there are none."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return "-"
    mean = sum(finite) / len(finite)
    std = (sum((v - mean) ** 2 for v in finite) / len(finite)) ** 0.5
    return f"{mean:.1f}+-{std:.1f} [{min(finite):.0f}, {max(finite):.0f}]"
