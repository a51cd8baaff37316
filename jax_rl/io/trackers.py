"""Experiment trackers: TensorBoard and Weights & Biases, as sinks beside the CSV files.

`--logger csv,tensorboard,wandb` chooses them; the CSV files are always
written. Each agent's `RunLogger` hands every scalar it logs to its sinks:

- evaluations: `eval/return_mean`, `eval/return_std`;
- training rows: the learner's metrics under their own names (`loss/critic`,
  `dual/temperature`, ...), the rest under `train/` (`train/episode_return`,
  `train/updates`, `train/replay_ratio`), and `perf/steps_per_s`, the
  environment steps per second since the previous row;
- videos of `--video_every` (W&B only; TensorBoard shows scalars);
- the run's config.json (W&B's run config; TensorBoard's text tab).

`TensorBoardSink` writes event files (tensorboardX's writer) into the agent's
folder, so `tensorboard --logdir runs` names each run by its folder, and each
agent of a population by its own. `WandbSink` starts one W&B run per agent,
named by its folder and grouped by the run's folder, in the project
`$WANDB_PROJECT` (default jax_rl), its files in the agent's folder (or
`$WANDB_DIR`); online or offline as W&B's own settings say
(`WANDB_MODE=offline`, `wandb login`). A resumed run continues the same W&B run
and TensorBoard drops the steps it writes again.

Both are optional extras: `check_installed` refuses a tracker whose package is
missing with one line naming the install command, before anything compiles.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

SINKS = ("csv", "tensorboard", "wandb")
# tracker -> (the module it needs, the command that installs it)
REQUIREMENTS = {
    "tensorboard": ("tensorboardX", "pip install 'jax_rl[tensorboard]'"),
    "wandb": ("wandb", "pip install 'jax_rl[wandb]'"),
}
WANDB_RUN_ID = "wandb-run-id"  # in the agent's folder: the W&B run a resumed run continues


class TrackerError(RuntimeError):
    """A tracker that cannot be used (not installed, or refuses to start); one line."""


def parse_loggers(text: str) -> tuple[str, ...]:
    """`csv,tensorboard` -> ("csv", "tensorboard"): an argparse type; csv always first."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in SINKS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown logger {', '.join(map(repr, unknown)) or repr(text)}; choose one or "
            f"more of {', '.join(SINKS)}, comma-separated"
        )
    return ("csv", *dict.fromkeys(n for n in names if n != "csv"))


def check_installed(names: Sequence[str]) -> None:
    """TrackerError naming the install command for the first tracker not installed."""
    for name in names:
        if name not in REQUIREMENTS:
            continue
        module, command = REQUIREMENTS[name]
        if importlib.util.find_spec(module) is None:
            raise TrackerError(
                f"--logger {name} needs the {module} package, which is not installed: {command}"
            )


class Sink(Protocol):
    """Where an agent's logs go besides its CSV files."""

    def config(self, values: Mapping[str, Any]) -> None: ...

    def resumed(self, step: int) -> None:
        """The run continues from its checkpoint at `step`: what follows rewrites later steps."""
        ...

    def scalars(self, step: int, values: Mapping[str, float]) -> None: ...

    def video(self, step: int, path: Path, episode_return: float) -> None: ...

    def close(self) -> None: ...


def make_sinks(
    names: Sequence[str], directory: Path, name: str, group: str | None, resume: bool
) -> list[Sink]:
    """The sinks of one agent logging into `directory` (csv is the logger's own)."""
    sinks: list[Sink] = []
    if "tensorboard" in names:
        sinks.append(TensorBoardSink(directory))
    if "wandb" in names:
        sinks.append(WandbSink(directory, name, group, resume))
    return sinks


class TensorBoardSink:
    """Event files in `directory`; the writer opens at the first scalar, after a resumed
    run has said from which step it writes again (`resumed`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._writer: Any = None
        self._purge: int | None = None
        self._config: Mapping[str, Any] | None = None

    def resumed(self, step: int) -> None:
        """Events after `step`, from the interrupted process, are dropped."""
        self._purge = step + 1

    def _open(self) -> Any:
        if self._writer is None:
            from tensorboardX import SummaryWriter

            self._writer = SummaryWriter(
                logdir=str(self.directory), purge_step=self._purge, flush_secs=10
            )
            if self._config is not None:
                text = json.dumps(self._config, indent=2, default=str)
                # Indented: TensorBoard's text tab reads Markdown, this keeps it verbatim.
                self._writer.add_text("config", "    " + text.replace("\n", "\n    "), 0)
        return self._writer

    def config(self, values: Mapping[str, Any]) -> None:
        self._config = dict(values)

    def scalars(self, step: int, values: Mapping[str, float]) -> None:
        writer = self._open()
        for tag, value in values.items():
            if math.isfinite(value):  # NaN: no finished episode yet, or a diverged agent
                writer.add_scalar(tag, value, step)

    def video(self, step: int, path: Path, episode_return: float) -> None:
        """Nothing: TensorBoard's video needs moviepy; the file is in videos/."""

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


class WandbSink:
    """One W&B run for one agent, started with its config (the first `config` call)."""

    def __init__(self, directory: Path, name: str, group: str | None, resume: bool) -> None:
        self.directory = Path(directory)
        self.name, self.group, self.resume = name, group, resume
        self._run: Any = None

    def config(self, values: Mapping[str, Any]) -> None:
        if self._run is not None:
            self._run.config.update(dict(values), allow_val_change=True)
            return
        import wandb

        id_file = self.directory / WANDB_RUN_ID
        run_id = id_file.read_text().strip() if self.resume and id_file.is_file() else None
        try:
            self._run = wandb.init(
                project=os.environ.get("WANDB_PROJECT", "jax_rl"),
                # W&B's files in the agent's folder, unless the user chose a place.
                dir=None if os.environ.get("WANDB_DIR") else str(self.directory),
                name=self.name,
                group=self.group,
                config=json.loads(json.dumps(dict(values), default=str)),
                id=run_id,
                resume="allow" if run_id else None,
                reinit="create_new",  # one run per agent of a population, side by side
            )
        except Exception as e:  # wandb raises many kinds (no login, no network, ...)
            detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise TrackerError(
                f"--logger wandb: W&B could not start a run ({detail}); run `wandb login`, "
                "or set WANDB_MODE=offline to log locally and `wandb sync` later"
            ) from None
        id_file.write_text(self._run.id)

    def resumed(self, step: int) -> None:
        """Nothing: the run continues its W&B run (`config`), which keeps the steps it has."""

    def scalars(self, step: int, values: Mapping[str, float]) -> None:
        if self._run is not None:
            # W&B's charts take no NaN (a diverged agent's); they are left out.
            self._run.log({k: v for k, v in values.items() if math.isfinite(v)}, step=step)

    def video(self, step: int, path: Path, episode_return: float) -> None:
        if self._run is not None:
            import wandb

            caption = f"step {step}: return {episode_return:.1f}"
            self._run.log({"video": wandb.Video(str(path), caption=caption)}, step=step)

    def close(self) -> None:
        if self._run is not None:
            self._run.finish()
            self._run = None
