"""The standard results tables, resumable across sittings.

    python -m jax_rl.tools.results                   # 6 DMC tasks x TD3, SAC, MPO x 3 seeds, 100k
    python -m jax_rl.tools.results --tasks cartpole-swingup,walker-walk --learners SAC
    python -m jax_rl.tools.results --suite gym       # HalfCheetah-v5, Hopper-v5 x SAC, TD3, 200k
    python -m jax_rl.tools.results --suite playground  # the six tasks on MJX, device pipeline
    python -m jax_rl.tools.results --suite playground --seeds 5 --steps 500000  # on a GPU
    python -m jax_rl.tools.results --suite dmc28     # all 28 DMC state tasks x TD3, SAC, 100k
    python -m jax_rl.tools.results --table_only      # rebuild the table and figures from the runs
    python -m jax_rl.tools.results --engine ray      # the cells at once (docs/cluster.md)
    python -m jax_rl.tools.results --tasks walker-walk --learners SAC --adopt RUN  # made by hand

A suite is a backend's entry point, its standard tasks and learners, a step
count and the published figures the table sets beside ours (`SUITES`).
Each (task, learner) cell is one run of the suite's entry point with its presets
(`--preset auto`, or `--preset NAME`, whose table is <out>_NAME: `--preset tuned` makes
the tables of the task entries): a vmapped population of `--seeds` agents, seeds 0..n-1,
checkpointed every `--checkpoint_every` steps into `--runs_dir`. A cell whose
results are already under `--out` is skipped, unless the settings it resolves to now
(a preset edited since, other `--flags`) differ from those its results ran with:
then it trains again; a cell with a checkpoint in `--runs_dir` continues from it
(`--resume`); so the same command, run again, picks up where the last sitting
stopped. Each finished run's CSVs, configs and
summaries are copied to `--out/<task>/<learner>/`; the table goes to
`<out>.md` (final eval return, mean +- 95% CI over seeds, beside the published
figures and their source) and the figure, a panel per task, to `<out>.png`. `--out` is
docs/results/<suite><steps/1000>k unless the suite names its table (dmc28: dmc28.md, whose
rows also give each cell's wall time and updates, and close with the means over its tasks).
The dmc28 and gym tables end with rliable's aggregates over their tasks (IQM, mean, median,
optimality gap, probability of improvement, with stratified-bootstrap intervals:
`jax_rl.tools.aggregates`, docs/aggregates.md) and their performance profiles,
`<out>_profiles.png`; a sitting writes that block when it ends (its bootstrap takes about a
minute), not after each cell. `--table_only` trains nothing and only writes the table and
figures from the results under `--out`.

`--adopt RUN` takes a finished run made outside the tool (the entry point with flags, say,
before a preset took those settings over) into the table as the one cell named by `--tasks`
and `--learners`, without training it again: only if it ran the settings the cell resolves
to now (compared as for skipping a cell), with the same seeds and steps. Its config.json
then names the cell's preset and keeps the run's own preset and flags under "adopted".

`--engine ray [--address HOST:PORT]` trains the cells as Ray tasks (`jax_rl.run.cluster`,
docs/cluster.md): all at once where there are the cores, each pinned to one, on this
machine or a cluster; the same skipping, resuming, files and table. A lost worker's cell
is retried and continues from its checkpoint in `--runs_dir` (shared storage on a cluster).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import importlib
import itertools
import json
import os
import posixpath
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from jax_rl.envs import playground
from jax_rl.io.logger import scratch_folder
from jax_rl.run import cli, cluster, presets
from jax_rl.run.presets import AUTO
from jax_rl.tools.published import TIANSHOU_200K, Reference
from jax_rl.watch import plot

if TYPE_CHECKING:  # imported where the aggregates are made: rliable takes seconds to import
    from jax_rl.tools.aggregates import ScoreMatrix

ROOT = Path(__file__).resolve().parents[2]
LEARNERS = ("TD3", "SAC", "MPO")
COPIED = ("*.csv", "*.json", "*.md")  # what of a run lands in the repository (no checkpoints)
REFERENCE_STYLES = ("--", ":", "-.")  # the figure's line for each published column


@dataclasses.dataclass(frozen=True)
class Suite:
    """One standard table: whose tasks, trained how long, beside which published figures."""

    title: str
    entry_point: str  # jax_rl/<this>
    backend: str  # the entry point's Backend class (jax_rl.run.driver.Backend)
    tasks: tuple[str, ...]
    learners: tuple[str, ...]
    steps: int
    out_stem: str  # docs/results/<out_stem><steps/1000>k (unless `out_name`)
    references: tuple[Reference, ...]
    reference_steps: int  # the step count the references hold at
    note: str  # what the table's reader must know about the settings
    make_target: str
    loop: str = "the host loop"  # which of the two training loops the entry point drives
    learner_flags: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """flags one learner gets in every cell of this suite (before `--flags`)"""
    out_name: str | None = None
    """the results' name under docs/results at the suite's own `steps`, in place of
    <out_stem><steps/1000>k (a name that says what the table is: "dmc28"); other step
    counts keep <out_stem><steps/1000>k, so that they never overwrite the table"""
    mean_row: bool = False
    """close the table with each learner's mean over the suite's tasks, beside each published
    column's mean over the same tasks (`mean_rows`): for a suite of many tasks"""
    reading: str = ""
    """a paragraph under the published figures: how to set them beside ours (where their
    protocols differ from the suite's)"""
    cell_compute: bool = False
    """a column per learner with each cell's wall time, updates and action repeat (`cost_text`):
    for a suite whose published columns make other numbers of updates per frame"""
    normalisation: str | None = None
    """the aggregates block's normalisation (`jax_rl.tools.aggregates.NORMALISATIONS`): the
    table then closes with rliable's aggregates over its tasks and a performance-profile
    figure, <out>_profiles.png (`aggregate_lines`); None: neither"""
    improvements: tuple[tuple[str, str], ...] = ()
    """the (X, Y) pairs of learners or per-seed published columns whose probability of
    improvement P(X > Y) the aggregates block gives"""

    def out_folder(self, steps: int) -> str:
        """The results folder's name under docs/results for a table at `steps` steps."""
        if self.out_name is not None and steps == self.steps:
            return self.out_name
        return f"{self.out_stem}{steps // 1000}k"

    def task_flags(self, task: str) -> list[str]:
        if self.entry_point == "main_dm_control.py":
            domain, task_name = task.split("-", 1)
            return ["--domain_name", domain, "--task_name", task_name]
        return ["--env", task]

    def check_task(self, task: str) -> str | None:
        if self.entry_point == "main_dm_control.py" and "-" not in task:
            return f"task {task!r}: expected domain-task, e.g. cartpole-swingup"
        return None


# Published state-based SAC at 100k environment steps (mean, standard deviation), from
# CURL (Srinivas, Laskin & Abbeel, ICML 2020), Table 1, column "State SAC", "100K step
# scores": SAC on proprioceptive states. The table counts environment steps (its pixel
# methods' action repeat included), the definition we use. CURL does not say how its State
# SAC was configured or how many seeds it ran.
CURL_STATE_SAC_100K = {
    "cartpole-swingup": (835.0, 22.0),
    "walker-walk": (891.0, 82.0),
    "cheetah-run": (616.0, 18.0),
    "reacher-easy": (746.0, 25.0),
    "finger-spin": (811.0, 46.0),
    "ball_in_cup-catch": (746.0, 91.0),
}

# State-based SAC in TD-MPC2's published results (Hansen, Su & Wang, ICLR 2024; repository
# nicklashansen/tdmpc2, results/sac/<task>.csv): the evaluation return at 100k environment
# steps of its 3 seeds, their mean and sample standard deviation (computed here from the
# CSVs; per seed: cartpole 834.3/844.8/825.8, walker 697.1/509.6/917.8, cheetah
# 362.4/331.1/236.9, reacher 813.4/68.4/739.3, finger 743.5/774.1/769.6, cup
# 970.1/949.2/955.0; and for two tasks outside the standard six, held out for every
# preset: walker-run 367.8/355.7/295.2, finger-turn-easy 181.7/505.4/472.1).
TDMPC2_SAC_100K = {
    "cartpole-swingup": (835.0, 9.5),
    "walker-walk": (708.2, 204.3),
    "cheetah-run": (310.1, 65.3),
    "reacher-easy": (540.4, 410.4),
    "finger-spin": (762.4, 16.5),
    "ball_in_cup-catch": (958.1, 10.8),
    "walker-run": (339.6, 38.9),
    "finger-turn_easy": (386.4, 178.1),
}

# Today's bar at 100k frames (../shared/REFERENCES.md): MR.Q (Fujimoto et al., ICLR 2025)
# from its results files (50k agent steps with action repeat 2), SimbaV2 (Lee et al., 2025)
# from its repository's CSVs; 10 seeds each, mean and standard deviation. Our steps are
# frames (no action repeat), so the step counts match.
MRQ_100K = {
    "cartpole-swingup": (853.0, 7.0),
    "walker-walk": (891.0, 78.0),
    "cheetah-run": (648.0, 58.0),
    "reacher-easy": (940.0, 45.0),
    "finger-spin": (733.0, 159.0),
    "ball_in_cup-catch": (965.0, 8.0),
    "walker-run": (479.0, 109.0),
}
SIMBAV2_100K = {
    "cartpole-swingup": (861.0, 13.0),
    "walker-walk": (962.0, 5.0),
    "cheetah-run": (642.0, 118.0),
    "reacher-easy": (967.0, 29.0),
    "finger-spin": (727.0, 169.0),
    "ball_in_cup-catch": (965.0, 29.0),
    "walker-run": (680.0, 22.0),
}

CURL_REFERENCE = Reference(
    "CURL State SAC",
    "SAC",
    CURL_STATE_SAC_100K,
    "CURL (Srinivas et al., 2020), Table 1, State SAC, 100k env steps (seeds and "
    "settings not given)",
)
TDMPC2_REFERENCE = Reference(
    "TD-MPC2 SAC",
    "SAC",
    TDMPC2_SAC_100K,
    "TD-MPC2 (Hansen et al., 2024), its state-based SAC baseline, nicklashansen/tdmpc2 "
    "results/sac/<task>.csv, the return at step 100k, mean ± sample standard "
    "deviation of its 3 seeds (computed from the CSVs; TD-MPC2's dm_control wrapper "
    "repeats each action twice, and the CSVs do not say whether their steps count "
    "the repeats)",
)
DMC_REFERENCES = (CURL_REFERENCE, TDMPC2_REFERENCE)  # the Playground table's columns

DMC_REFERENCES_2025 = (
    Reference(
        "MR.Q",
        "TD3",
        MRQ_100K,
        "MR.Q (Fujimoto et al., ICLR 2025), its results files, 10 seeds, at 100k "
        "frames (50k agent steps with action repeat 2; ours repeat no action, so our "
        "steps are frames)",
    ),
    Reference(
        "SimbaV2",
        "SAC",
        SIMBAV2_100K,
        "SimbaV2 (Lee et al., 2025, SAC with SimbaV2 networks), its repository's "
        "CSVs, 10 seeds, at 100k frames",
    ),
)

# dm_control's 28 state tasks at 100k frames (../shared/REFERENCES.md, "DM Control Suite,
# all 28 state tasks"), mean and sample standard deviation over seeds. MR.Q from its own
# results file, where the 50k row of agent steps with action repeat 2 is 100k frames;
# SimbaV2 and BRO only on the tasks they published.
DMC28_TASKS = (
    "acrobot-swingup", "ball_in_cup-catch", "cartpole-balance", "cartpole-balance_sparse",
    "cartpole-swingup", "cartpole-swingup_sparse", "cheetah-run", "dog-run", "dog-stand",
    "dog-trot", "dog-walk", "finger-spin", "finger-turn_easy", "finger-turn_hard", "fish-swim",
    "hopper-hop", "hopper-stand", "humanoid-run", "humanoid-stand", "humanoid-walk",
    "pendulum-swingup", "quadruped-run", "quadruped-walk", "reacher-easy", "reacher-hard",
    "walker-run", "walker-stand", "walker-walk",
)  # fmt: skip
MRQ_DMC28_100K = {
    "acrobot-swingup": (56.0, 51.0),
    "ball_in_cup-catch": (965.0, 9.0),
    "cartpole-balance": (993.0, 14.0),
    "cartpole-balance_sparse": (978.0, 69.0),
    "cartpole-swingup": (853.0, 8.0),
    "cartpole-swingup_sparse": (287.0, 263.0),
    "cheetah-run": (648.0, 61.0),
    "dog-run": (58.0, 7.0),
    "dog-stand": (230.0, 22.0),
    "dog-trot": (64.0, 7.0),
    "dog-walk": (81.0, 12.0),
    "finger-spin": (733.0, 167.0),
    "finger-turn_easy": (362.0, 176.0),
    "finger-turn_hard": (230.0, 146.0),
    "fish-swim": (122.0, 52.0),
    "hopper-hop": (17.0, 27.0),
    "hopper-stand": (177.0, 224.0),
    "humanoid-run": (1.0, 0.0),
    "humanoid-stand": (6.0, 1.0),
    "humanoid-walk": (2.0, 0.0),
    "pendulum-swingup": (617.0, 256.0),
    "quadruped-run": (613.0, 112.0),
    "quadruped-walk": (884.0, 62.0),
    "reacher-easy": (940.0, 48.0),
    "reacher-hard": (806.0, 107.0),
    "walker-run": (479.0, 115.0),
    "walker-stand": (956.0, 36.0),
    "walker-walk": (891.0, 83.0),
}
SIMBAV2_DMC28_100K = {
    "ball_in_cup-catch": (965.0, 31.0),
    "cartpole-swingup": (861.0, 13.0),
    "cartpole-swingup_sparse": (60.0, 113.0),
    "cheetah-run": (642.0, 124.0),
    "dog-run": (111.0, 15.0),
    "dog-stand": (453.0, 52.0),
    "dog-trot": (132.0, 27.0),
    "dog-walk": (207.0, 48.0),
    "finger-spin": (727.0, 178.0),
    "hopper-hop": (47.0, 63.0),
    "hopper-stand": (229.0, 266.0),
    "humanoid-run": (1.0, 0.0),
    "humanoid-walk": (2.0, 1.0),
    "pendulum-swingup": (245.0, 339.0),
    "quadruped-walk": (804.0, 228.0),
    "reacher-easy": (967.0, 31.0),
    "walker-run": (680.0, 23.0),
    "walker-walk": (962.0, 6.0),
}
BRO_DMC28_100K = {
    "ball_in_cup-catch": (977.0, 2.0),
    "cartpole-swingup": (872.0, 6.0),
    "cartpole-swingup_sparse": (797.0, 43.0),
    "cheetah-run": (517.0, 58.0),
    "dog-run": (23.0, 14.0),
    "dog-stand": (247.0, 74.0),
    "dog-trot": (29.0, 16.0),
    "dog-walk": (60.0, 30.0),
    "finger-spin": (979.0, 5.0),
    "hopper-hop": (220.0, 63.0),
    "hopper-stand": (862.0, 84.0),
    "humanoid-run": (8.0, 13.0),
    "humanoid-walk": (25.0, 34.0),
    "pendulum-swingup": (812.0, 96.0),
    "quadruped-walk": (810.0, 114.0),
    "reacher-easy": (877.0, 117.0),
    "walker-run": (651.0, 59.0),
    "walker-walk": (963.0, 8.0),
}
BRO_FIVE_SEEDS = (  # BRO's tasks with 5 seeds, not 10 (REFERENCES.md's dagger)
    "ball_in_cup-catch", "cartpole-swingup", "cartpole-swingup_sparse", "finger-spin",
    "hopper-stand", "quadruped-walk", "reacher-easy", "walker-walk",
)  # fmt: skip
DMC28_REFERENCES = (
    Reference(
        "MR.Q",
        "TD3",  # deterministic, TD3's lineage: TD3's colour
        MRQ_DMC28_100K,
        "MR.Q (Fujimoto et al., ICLR 2025), its results file results/dmc_results.txt "
        "(facebookresearch/MRQ), 10 seeds, at 50k agent steps x action repeat 2 = 100k "
        "frames (50k updates)",
        seeds="published/mrq_dmc28_100k.csv",
    ),
    Reference(
        "SimbaV2",
        "SAC",  # SAC with SimbaV2's networks
        SIMBAV2_DMC28_100K,
        "SimbaV2 (Lee et al., 2025, SAC with SimbaV2 networks), the SimbaV2 repository's "
        "baseline CSVs (dojeon-ai/SimbaV2), UTD 2, action repeat 2 (100k updates at 100k "
        "frames), 10 seeds, at 100k frames; - where it published no run",
    ),
    Reference(
        "BRO",
        "SAC",  # SAC-based, larger regularised critics with optimistic exploration
        BRO_DMC28_100K,
        "BRO (Nauman et al., NeurIPS 2024), its own training data, UTD 10, no action repeat "
        "(1M updates at 100k frames), 10 seeds, or 5 where marked †, read at 100k frames; "
        "- where it published no run",
        marks=dict.fromkeys(BRO_FIVE_SEEDS, "†"),
    ),
)

# dm_control's tasks ("domain-task") by their MuJoCo Playground names, from the adapter's
# own table of the pairs.
PLAYGROUND_OF_DMC = {
    f"{domain}-{task}": name for name, (domain, task) in playground.DM_CONTROL_TASKS.items()
}

SUITES = {
    "dmc": Suite(
        title="DM Control Suite, state observations",
        entry_point="main_dm_control.py",
        backend="DMControlBackend",
        tasks=tuple(CURL_STATE_SAC_100K),
        learners=LEARNERS,
        steps=100_000,
        out_stem="dmc",
        # A SAC baseline, then today's bar (CURL's column: dmc100k_previous.md).
        references=(TDMPC2_REFERENCE, *DMC_REFERENCES_2025),
        reference_steps=100_000,
        note=(
            "TD3's and SAC's entry `dm_control/*` is CrossQ with 256-256 critics, chosen on "
            "cheetah-run, walker-walk and finger-spin; the MPO entry `dm_control/*` was chosen "
            "on cartpole-swingup only. The table before CrossQ: "
            "[dmc100k_previous.md](dmc100k_previous.md)"
        ),
        make_target="results",
    ),
    "gym": Suite(
        title="Gymnasium MuJoCo",
        entry_point="main_gym.py",
        backend="GymnasiumBackend",
        tasks=("HalfCheetah-v5", "Hopper-v5", "Humanoid-v5", "Walker2d-v5", "Ant-v5"),
        learners=("SAC", "TD3"),
        steps=200_000,
        out_stem="gym",
        references=TIANSHOU_200K,
        reference_steps=200_000,
        note="each learner's `gymnasium/*` entry carries the settings of Tianshou's MuJoCo "
        "scripts, which made the reference column, and was chosen on HalfCheetah-v5, "
        "Hopper-v5 and Humanoid-v5",
        make_target="gym-results",
        normalisation="gym",
        improvements=(("TD3", "SAC"),),
    ),
    "playground": Suite(
        title="DM Control Suite on MuJoCo Playground (MJX), device pipeline",
        entry_point="main_brax.py",
        backend="BraxBackend",
        tasks=tuple(PLAYGROUND_OF_DMC[t] for t in CURL_STATE_SAC_100K),
        learners=LEARNERS,
        steps=100_000,
        out_stem="playground",
        references=tuple(
            dataclasses.replace(
                ref,
                values={PLAYGROUND_OF_DMC[t]: v for t, v in ref.values.items()},
                source=f"{ref.source}, on dm_control's tasks (C MuJoCo)",
            )
            for ref in DMC_REFERENCES
        ),
        reference_steps=100_000,
        note="each task's environments, updates per iteration and episode length come from "
        "`jax_rl/envs/playground.py`, and MPO solves its temperature in the graph with "
        "`--dual_solver newton`. The published figures are dm_control's: Playground's tasks "
        "port its rewards and control steps (1000-step episodes, no action repeat on these "
        "six), and Playground itself gives SAC no figure at 100k (its configuration trains "
        "5M-10M steps: mujoco_playground/config/dm_control_suite_params.py)",
        make_target="playground-results",
        loop="the device pipeline",
        learner_flags={"MPO": ("--dual_solver", "newton")},
    ),
    "dmc28": Suite(
        title="DM Control Suite, all 28 state tasks",
        entry_point="main_dm_control.py",
        backend="DMControlBackend",
        tasks=DMC28_TASKS,
        learners=("TD3", "SAC"),  # MPO's cells cost up to twice theirs: not 28 more of them
        steps=100_000,
        out_stem="dmc28_",
        references=DMC28_REFERENCES,
        reference_steps=100_000,
        note=(
            "a `*` entry (or `--preset recipe`) is *panel* on the tasks it was chosen on (its "
            "`tuned_on`, as the run's config.json records it) and held out on all others; "
            "MPO is left out, too costly over 28 tasks, its cells taking up to twice as long"
        ),
        reading=(
            "Steps are frames: a run with `--action_repeat K` holds each decision for K "
            "frames and makes one update per decision once its random start steps are in "
            "(U with `--updates_per_step U`), so a cell of 100k frames makes U (100k - start "
            "steps) / K updates; the compute columns give each cell's, with its action repeat "
            "and wall time. The published "
            "columns ran other protocols: MR.Q and SimbaV2 repeat each action for 2 frames "
            "(50k decisions in 100k frames; MR.Q makes one update per decision, SimbaV2 two), "
            "BRO repeats none and makes 10 updates per frame. Compare at equal frames, with "
            "each cell's updates beside it. MR.Q's mean over the 28 tasks, 466 at 100k "
            "frames, is 774 at 500k and 836 at 1M."
        ),
        make_target="dmc-suite",
        out_name="dmc28",
        mean_row=True,
        cell_compute=True,
        normalisation="dmc",
        improvements=(("TD3", "SAC"), ("TD3", "MR.Q")),
    ),
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=cli.HelpFormatter,
    )
    parser.add_argument(
        "--suite",
        choices=sorted(SUITES),
        default="dmc",
        help="dmc: dm_control's six standard tasks, TD3/SAC/MPO, 100k steps, host loop; gym: "
        "five Gymnasium MuJoCo v5 tasks (HalfCheetah, Hopper, Humanoid, Walker2d, Ant), SAC/TD3, "
        "200k steps; playground: the same six "
        "tasks on MuJoCo Playground, TD3/SAC/MPO, 100k steps, device pipeline; dmc28: all 28 "
        "of dm_control's state tasks, TD3/SAC, 100k frames, host loop",
    )
    parser.add_argument(
        "--tasks", default=None, help="the suite's tasks, comma-separated (default: all of them)"
    )
    parser.add_argument("--learners", default=None, help="policies (default: the suite's)")
    parser.add_argument("--seeds", type=int, default=3, help="agents per run (seeds 0..n-1)")
    parser.add_argument(
        "--steps", type=int, default=None, help="env steps per agent (default: the suite's)"
    )
    parser.add_argument(
        "--runs_dir",
        type=Path,
        default=Path("runs/results"),
        help="where runs train and checkpoint (keep it outside the repository for long runs)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results folder (default docs/results/<suite><steps/1000>k, or the name the "
        "suite gives its table at its own steps: dmc28); the table and figure go beside it "
        "as <out>.md and <out>.png",
    )
    parser.add_argument("--checkpoint_every", type=int, default=5_000, help="steps")
    parser.add_argument(
        "--table_only",
        action="store_true",
        help="train nothing; rebuild the table and figures from the results under --out",
    )
    parser.add_argument(
        "--bootstrap_reps",
        type=int,
        default=2000,
        help="resamples of the aggregates' stratified bootstrap (dmc28 and gym tables)",
    )
    parser.add_argument(
        "--preset",
        default=AUTO,
        help="every cell's --preset: auto (the defaults, one entry per backend), tuned (the "
        "task entries chosen on their own task: the tables made before issue 97), or a name; "
        "a preset other than auto writes its own table (<out>_<preset>)",
    )
    parser.add_argument(
        "--flags",
        default="",
        help='more flags for every run, e.g. "--eval_episodes 5" (they win over presets)',
    )
    parser.add_argument(
        "--adopt",
        type=Path,
        default=None,
        metavar="RUN",
        help="take this finished run into the table as the one cell of --tasks and --learners, "
        "if it ran the settings that cell resolves to now (no training)",
    )
    cluster.add_engine_flags(parser, population=False)
    parser.add_argument(
        "--progress_every",
        type=float,
        default=60.0,
        help="seconds between a training cell's progress lines (its steps done; with "
        "--engine local also the latest evaluation's returns)",
    )
    args = parser.parse_args(argv)
    problem = cluster.engine_problem(args)
    if problem is None and "--engine" in shlex.split(args.flags):
        problem = "--engine goes to jax_rl.tools.results itself, not into --flags"
    if problem is None and not args.progress_every > 0:  # also NaN
        problem = (
            f"--progress_every must be a positive number of seconds, got {args.progress_every}"
        )
    if problem is None and args.adopt is not None:
        if args.tasks is None or args.learners is None or "," in args.tasks + args.learners:
            problem = "--adopt takes one cell: name one task with --tasks and one --learners"
        elif args.table_only:
            problem = "--adopt and --table_only do not go together"
    if problem:
        cluster.fail(problem)
    args.suite_name = args.suite
    suite = args.suite = SUITES[args.suite]
    args.tasks = [t for t in args.tasks.split(",") if t] if args.tasks else list(suite.tasks)
    args.learners = (
        [p for p in args.learners.split(",") if p] if args.learners else list(suite.learners)
    )
    args.steps = suite.steps if args.steps is None else args.steps
    for task in args.tasks:
        problem = suite.check_task(task)
        if problem:
            parser.error(problem)
    for learner in args.learners:
        if learner not in LEARNERS:
            parser.error(f"learner {learner!r}: choose from {', '.join(LEARNERS)}")
    if args.seeds < 1 or args.steps < 1 or args.bootstrap_reps < 1:
        parser.error("--seeds, --steps and --bootstrap_reps must be positive")
    if args.out is None and args.steps < suite.steps:  # never a docs/ table of a short run
        args.out = scratch_folder(
            "results", f"--steps {args.steps} is below the table's {suite.steps}"
        )
    if args.preset != AUTO and re.search(r"(^|\s)--preset(\s|=|$)", args.flags):
        cluster.fail("--preset is given twice: as --preset and inside --flags")
    if args.out is None:
        args.out = default_out(args)
    return args


def check_table_preset(args: argparse.Namespace) -> None:
    """Refuse (one line, exit 2) to write the defaults' cells into a table of task entries:
    the tables made before the entries left the defaults are `--preset tuned` tables."""
    tuned = task_entry_cells(args.out)
    if tuned and args.preset == AUTO and "--preset" not in args.flags:
        more = ", ..." if len(tuned) > 1 else ""
        cluster.fail(
            f"{args.out} holds cells of task entries ({tuned[0]}{more}), which the defaults "
            "no longer have: it is a --preset tuned table; pass --preset tuned to add to it, "
            "or another --out for the defaults' table"
        )


def default_out(args: argparse.Namespace) -> Path:
    """docs/results/<the suite's folder at these steps>, `_<preset>` after it for a preset
    other than auto."""
    own = "" if args.preset == AUTO else f"_{args.preset}"
    return ROOT / "docs" / "results" / f"{args.suite.out_folder(args.steps)}{own}"


def task_entry_cells(out: Path) -> list[str]:
    """The cells under `out` that ran a task entry (a preset chosen on its own task:
    `tuned/<backend>/<task>`, or `<backend>/<task>` from before entries left the defaults),
    as "task/learner (preset)"."""
    cells = []
    for config in sorted(out.glob("*/*/config.json")):
        preset = (json.loads(config.read_text()).get("preset") or {}).get("name", "")
        parts = preset.split("/")
        if parts[-1] != "*" and (len(parts) == 2 or parts[0] == presets.TUNED):
            cells.append(f"{config.parent.parent.name}/{config.parent.name} ({preset})")
    return cells


def run_flags(args: argparse.Namespace, task: str, learner: str) -> list[str]:
    """The entry point's flags for one cell (the same when it resumes)."""
    return [
        "--policy", learner, *args.suite.task_flags(task),
        "--num_seeds", str(args.seeds), "--seed", "0", "--max_timesteps", str(args.steps),
        "--checkpoint_every", str(args.checkpoint_every), "--no_progress",
        *args.suite.learner_flags.get(learner, ()),
        *(() if args.preset == AUTO else ("--preset", args.preset)), *shlex.split(args.flags),
    ]  # fmt: skip


def finished(result_dir: Path, seeds: int, steps: int) -> bool:
    """Whether `result_dir` holds a finished run of `seeds` agents and `steps` steps."""
    summary = result_dir / "summary.json"
    if not summary.exists():
        return False
    data = json.loads(summary.read_text())
    agents = len(data.get("agents", [None]))
    return agents == seeds and data.get("env_steps_per_agent", data.get("env_steps")) == steps


def cell_settings(args: argparse.Namespace, task: str, learner: str) -> tuple[Any, Any]:
    """The cell's resolved `driver.Settings` now (learner defaults -> presets -> flags) and
    its entry point's backend. Bad flags or a bad preset exit 2 with the entry point's one
    line, before anything trains."""
    from jax_rl.run import driver

    entry = importlib.import_module(f"jax_rl.{Path(args.suite.entry_point).stem}")
    argv = [*run_flags(args, task, learner), "--save_dir", str(args.runs_dir / "probe")]
    backend = getattr(entry, args.suite.backend)()
    return driver.resolve_settings(entry.build_parser(), backend, argv), backend


def resolved_settings(args: argparse.Namespace, task: str, learner: str) -> dict[str, Any]:
    """The settings the cell's run resolves to now, as its config.json records them:
    {"loop": ..., "algo": ..., "sweep": ...}."""
    s, _ = cell_settings(args, task, learner)
    record = {**s.recorded(), "sweep": s.sweep, "defaults": setting_defaults(s)}
    return json.loads(json.dumps(record))  # tuples as config.json has them: lists


def setting_defaults(s: Any) -> dict[str, dict[str, Any]]:
    """Every loop and algo setting's default: what a run made before a setting existed ran
    with ({"loop": {...}, "algo": {...}})."""
    return {
        part: {
            f.name: f.default
            for f in dataclasses.fields(config)
            if f.default is not dataclasses.MISSING
        }
        for part, config in (("loop", s.loop_config), ("algo", s.algo_config))
    }


def adopt(args: argparse.Namespace, run: Path, task: str, learner: str) -> str | None:
    """Copy the finished run `run` into `--out` as the cell (task, learner), its config.json
    naming the preset the cell resolves to now; or the reason it cannot be the cell, as one
    line (nothing copied). Its settings must be the cell's: the learner, the task, the seeds,
    the steps, the sweep and every loop and algo setting (as `changed_settings`: one added
    to the learners since it ran counts at its default)."""
    config_path = run / "config.json"
    if not config_path.exists():
        return f"{run} has no config.json: not a run of this project's entry points"
    if not finished(run, args.seeds, args.steps):
        return f"{run} is not a finished run of {args.seeds} agents x {args.steps} steps"
    recorded = json.loads(config_path.read_text())
    s, backend = cell_settings(args, task, learner)
    identity = json.loads(json.dumps({"policy": learner, **backend.env_fields(s.args)}))
    differences = [
        f"{key} {recorded.get(key)} -> {value}"
        for key, value in identity.items()
        if recorded.get(key) != value
    ]
    now = json.loads(
        json.dumps({**s.recorded(), "sweep": s.sweep, "defaults": setting_defaults(s)})
    )
    differences += changed_settings(config_path, now)
    if differences:
        return f"{run} ran other settings than the cell's: {'; '.join(differences)}"
    dest = args.out / task / learner
    copy_results(run, dest)
    cell = {"preset": s.preset_record(), "flags": json.loads(json.dumps(s.user_flags))}
    for path in [dest / "config.json", *dest.glob("*/config.json")]:
        config = json.loads(path.read_text())
        adopted = {"from": str(run), "preset": config.get("preset"), "flags": config.get("flags")}
        path.write_text(json.dumps({**config, **cell, "adopted": adopted}, indent=2))
    return None


def changed_settings(config: Path, now: dict[str, Any]) -> list[str]:
    """What differs between a run's config.json and `now` ("algo.init_alpha 1.0 -> 0.1").
    A setting the config does not record (added to the learners since it ran) ran at its
    default (`now["defaults"]`, where given): it differs only where `now` sets another
    value. A run without a config.json differs in nothing."""
    if not config.exists():
        return []
    recorded = json.loads(config.read_text())
    changes = []
    for part in ("loop", "algo"):
        # What the run did not record it ran at its default: filled in before the widths
        # are read as built (an unrecorded critic_hidden_sizes was the default's []).
        defaults = now.get("defaults", {}).get(part, {})
        unrecorded = set(defaults) - set(recorded.get(part, {}))
        before, after = {**defaults, **recorded.get(part, {})}, now[part]
        if part == "algo":
            before, after = effective_widths(before), effective_widths(after)
        for key, value in after.items():
            if key in before and before[key] != value:
                note = " (unrecorded: the default)" if key in unrecorded else ""
                changes.append(f"{part}.{key} {before[key]}{note} -> {value}")
    if recorded.get("sweep", {}) != now["sweep"]:
        changes.append(f"sweep {recorded.get('sweep', {})} -> {now['sweep']}")
    return changes


WIDTH_KEYS = ("actor_hidden_sizes", "critic_hidden_sizes")


def effective_widths(algo: dict[str, Any]) -> dict[str, Any]:
    """`algo` with empty `actor_hidden_sizes` / `critic_hidden_sizes` read as `hidden_sizes`
    (what the learners build): a run that named its 256-256 critics and one that took them
    from `hidden_sizes` ran the same networks."""
    shared = algo.get("hidden_sizes")
    return {
        key: shared if key in WIDTH_KEYS and value == [] and shared is not None else value
        for key, value in algo.items()
    }


def run_dir_of(args: argparse.Namespace, task: str, learner: str) -> Path:
    """Where a cell's run trains and checkpoints."""
    return args.runs_dir / f"{learner}-{task}"


def log_of(args: argparse.Namespace, task: str, learner: str) -> Path:
    """The cell's log: its runs' output, appended sitting after sitting."""
    return args.runs_dir / f"{learner}-{task}.log"


def prepare_run(
    args: argparse.Namespace,
    task: str,
    learner: str,
    settings: dict[str, Any],
    say: Callable[[str], None],
) -> list[str]:
    """The entry point's flags that train or continue the cell's run, its folder made
    ready. A run in `--runs_dir` with other settings than `settings` is moved aside, not
    resumed; one with a checkpoint is continued; a start that never checkpointed is
    removed. `say` tells the user which (the same on a retry: it continues)."""
    run_dir = run_dir_of(args, task, learner)
    flags = run_flags(args, task, learner)
    changes = changed_settings(run_dir / "config.json", settings)
    if changes:
        aside = run_dir.with_name(f"{run_dir.name}.replaced")
        shutil.rmtree(aside, ignore_errors=True)
        run_dir.rename(aside)
        say(f"the run in {run_dir} has other settings ({'; '.join(changes)}); moved to {aside}")
    checkpoints = run_dir / "checkpoints"
    if checkpoints.is_dir() and any(checkpoints.iterdir()):
        flags += ["--resume", str(run_dir)]
        how = "continuing from its checkpoint"
    else:
        shutil.rmtree(run_dir, ignore_errors=True)  # a start that never checkpointed
        flags += ["--save_dir", str(run_dir)]
        how = "starting"
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    say(f"{how} (log: {log_of(args, task, learner)})")
    return flags


class Stopped(Exception):
    """SIGTERM reached this sitting (the command line turns it into this exception)."""


def _raise_stopped(signum: int, frame: Any) -> None:
    raise Stopped


# How long a stopped sitting waits for its run to write a checkpoint and exit.
STOP_SECONDS = 300.0


def stop_run(process: subprocess.Popen, timeout: float = STOP_SECONDS) -> None:
    """Stop a cell's run as its own SIGTERM handler does (a checkpoint, then exit), and wait
    for it, killing it after `timeout` seconds: a sitting stopped by a signal leaves no run
    training on behind it, which the next sitting would meet in the same folder."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def train_cell(
    args: argparse.Namespace, task: str, learner: str, label: str, settings: dict[str, Any]
) -> bool:
    """Train (or continue) one cell; copy its results into the repository. False on failure."""
    run_dir = run_dir_of(args, task, learner)

    def say(text: str) -> None:
        print(f"{label} {learner} on {task}: {text}", flush=True)

    flags = prepare_run(args, task, learner, settings, say)
    log = log_of(args, task, learner)
    start = time.perf_counter()
    with (
        log.open("a") as out,
        subprocess.Popen(
            [sys.executable, str(ROOT / "jax_rl" / args.suite.entry_point), *flags],
            stdout=out,
            stderr=subprocess.STDOUT,
        ) as process,
    ):
        try:
            code = wait_reporting(process, run_dir, args.steps, args.progress_every, say)
        except (Stopped, KeyboardInterrupt):  # the run saves its checkpoint, then the sitting ends
            stop_run(process)
            raise
        except BaseException:  # as subprocess.call: a sitting that fails ends its run
            process.kill()
            raise
    if code != 0:
        print(f"{label} {learner} on {task}: exit code {code}; see {log}", flush=True)
        return False
    copy_results(run_dir, args.out / task / learner)
    finals = final_returns(args.out / task / learner)
    print(
        f"{label} {learner} on {task}: done in {time.perf_counter() - start:.0f} s, final "
        f"returns {' / '.join(f'{r:.0f}' for r in finals)}",
        flush=True,
    )
    return True


def wait_reporting(
    process: subprocess.Popen, run_dir: Path, total: int, every: float, say: Callable[[str], None]
) -> int:
    """Wait for the cell's run to end, saying every `every` seconds how far it is
    (`progress_line`), when that changed; its exit code."""
    said = None
    while True:
        try:
            return process.wait(timeout=every)
        except subprocess.TimeoutExpired:
            line = progress_line(run_dir, total)
            if line is not None and line != said:
                say(line)
                said = line


def progress_line(run_dir: Path, total: int) -> str | None:
    """How far a run is, from the CSVs it is writing: "45,000 / 100,000 steps; evaluation
    at 45,000: 914 / 944 / 852" (one return per agent); None before its first row."""
    step = cluster.latest_step(run_dir)
    if step is None:
        return None
    text = f"{step:,} / {total:,} steps"
    evaluation = latest_evaluation(run_dir)
    if evaluation is not None:
        at, returns = evaluation
        text += f"; evaluation at {at:,}: {' / '.join(f'{r:.0f}' for r in returns)}"
    return text


def latest_evaluation(run_dir: Path) -> tuple[int, list[float]] | None:
    """The newest step that every agent of the run has evaluated, and their returns there
    (a row still being written is skipped); None before the first evaluation."""
    agents = []
    for path in sorted(run_dir.rglob("evaluations.csv")):
        if "checkpoints" in path.relative_to(run_dir).parts:
            continue
        header, *lines = cluster.complete_lines(path) or [""]
        names = header.split(",")
        if "return_mean" not in names:  # not even its header written yet
            return None
        column, rows = names.index("return_mean"), {}
        for line in lines:
            fields = line.split(",")
            try:
                rows[int(fields[0])] = float(fields[column])
            except (ValueError, IndexError):
                continue  # not a row of numbers
        if not rows:
            return None
        agents.append(rows)
    if not agents:
        return None
    common = min(max(rows) for rows in agents)
    if not all(common in rows for rows in agents):
        return None
    return common, [rows[common] for rows in agents]


def result_files(run_dir: Path) -> list[Path]:
    """The run's CSVs, configs, summaries and ranking (no checkpoints, no parameters)."""
    return [
        path
        for pattern in COPIED
        for path in run_dir.rglob(pattern)
        if "checkpoints" not in path.relative_to(run_dir).parts
    ]


def copy_results(run_dir: Path, dest: Path) -> None:
    """The run's `result_files`, in `dest` as they are in `run_dir`."""
    shutil.rmtree(dest, ignore_errors=True)
    for path in result_files(run_dir):
        target = dest / path.relative_to(run_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def final_returns(result_dir: Path) -> list[float]:
    """Each agent's final eval return (the last row of its evaluations.csv), in seed order
    (agent folders <learner>-seed<k>: seed 10 after seed 9)."""
    paths = sorted(result_dir.rglob("evaluations.csv"), key=_seed_order)
    return [float(plot.read_curve(p)[1][-1]) for p in paths]


def _seed_order(path: Path) -> tuple[int, str]:
    match = re.search(r"seed(\d+)$", path.parent.name)
    return (int(match.group(1)) if match else -1, str(path))


def wall_time(result_dir: Path) -> float | None:
    summary = result_dir / "summary.json"
    return json.loads(summary.read_text()).get("wall_time") if summary.exists() else None


def tuning_of(result_dir: Path, task: str, learner: str) -> str:
    """Whether the cell's preset was chosen on `task`, from the preset its config.json
    recorded: "tuned" (a task entry: chosen on this task alone), "panel" (a `*` entry, one
    setting for every task of the backend, whose `tuned_on` names the task: one of the
    panel it was chosen on), "held out" (a `*` entry chosen on other tasks) or "defaults"
    (no preset: the published settings). Neither "tuned" nor "panel" is a held-out
    result. A `*` entry's `tuned_on` is the one the run recorded (the entry may have been
    replaced since); runs from before it was recorded take the file's."""
    config = result_dir / "config.json"
    preset = json.loads(config.read_text()).get("preset") if config.exists() else None
    if not preset:
        return "defaults"
    name = preset["name"]  # its entry may be gone since (folded into a `*` entry)
    tuned_on = preset.get("tuned_on")
    if tuned_on is None:
        tables = presets.load_file(learner)
        entry = tables["task"].get(name, tables["named"].get(name, {}))
        tuned_on = entry.get("tuned_on", [])
    if not presets.tuned(name, tuned_on, task):
        return "held out"
    return "panel" if name.endswith("/*") else "tuned"


def cell_text(finals: list[float]) -> str:
    if not finals:
        return "not run yet"
    mean = float(np.mean(finals))
    if len(finals) == 1:
        return f"{mean:.0f} (1 seed)"
    half = float(plot.confidence_halfwidth(np.array(finals)[:, None])[0])
    return f"{mean:.0f} ± {half:.0f}"


def reference_of(args: argparse.Namespace, ref: Reference, task: str) -> tuple[float, float] | None:
    """`ref`'s published (mean, spread) on `task`, where it holds one at these steps."""
    if args.steps != args.suite.reference_steps:
        return None
    return ref.values.get(task)


def table_tasks(args: argparse.Namespace) -> list[str]:
    """The table's rows: every task of the suite, then any other task with results under
    `--out` (a held-out task run with `--tasks`), then any other task asked for, so that a
    sitting narrowed to some tasks drops no row."""
    ran = sorted(p.name for p in args.out.iterdir() if p.is_dir()) if args.out.is_dir() else []
    return list(dict.fromkeys([*args.suite.tasks, *ran, *args.tasks]))


def device_of(result_dir: Path) -> str | None:
    """The device a run trained on, as its config.json records it (the device pipeline's)."""
    config = result_dir / "config.json"
    return json.loads(config.read_text()).get("device") if config.exists() else None


def regenerate_text(args: argparse.Namespace) -> str:
    """The table's command: its make target and the tool's own line (resumable)."""
    suite, given = args.suite, "" if args.preset == AUTO else f" --preset {args.preset}"
    where = args.out.resolve()
    if where != default_out(args) and where.is_relative_to(ROOT):  # a table of the project's
        given += f" --out {where.relative_to(ROOT)}"
    make = f"make {suite.make_target}" + (f' RESULTS_FLAGS="{given.strip()}"' if given else "")
    tool = f"python -m jax_rl.tools.results --suite {args.suite_name}{given}"
    return f"`{make}` (`{tool}`; resumable)"


def preset_text(preset: str) -> str:
    """What the cells' `--preset` ran, for the table's header."""
    if preset == AUTO:
        return "`--preset auto`: each learner's one entry for the backend, the same on every task"
    if preset == presets.TUNED:
        return (
            "`--preset tuned`: a task's own entry where the learner's presets file has one "
            "(`tuned/<backend>/<task>`, chosen on that task: each cell's config.json names the "
            "entry it ran), else the backend's one entry, as `--preset auto` runs it"
        )
    return f"`--preset {preset}`"


def _linked(note: str, out: Path) -> str:
    """The suite's note, whose links are written from docs/results/, for a table in `out`'s
    folder: the links made relative to it inside docs/, plain repository paths outside."""
    results, folder = ROOT / "docs" / "results", out.resolve().parent
    if folder == results:
        return note
    if folder.is_relative_to(ROOT / "docs"):
        here = Path(os.path.relpath(results, folder)).as_posix()
        return re.sub(r"\]\(([^)#:]+)\)", lambda m: f"]({here}/{m.group(1)})", note)
    return re.sub(r"\[[^\]]*\]\(([^)#:]+)\)", lambda m: f"`{_repository_path(m.group(1))}`", note)


def _repository_path(target: str) -> str:
    """A link written from docs/results/ as a repository path: "../aggregates.md" ->
    docs/aggregates.md (a folder's slash kept)."""
    return posixpath.normpath(f"docs/results/{target}") + ("/" if target.endswith("/") else "")


def write_table(args: argparse.Namespace, aggregates: bool = True) -> Path:
    """<out>.md: final return per task and learner, the references beside them, the compute
    (and, as the suite asks, each cell's compute in a column, the mean rows and the
    aggregates block, whose bootstrap takes a minute: without `aggregates`, as after each
    cell of a sitting, the block says when it comes)."""
    suite, steps_k = args.suite, f"{args.steps // 1000}k"
    learners, published = suite.learners, suite.references
    costs = [f"{learner}: wall time, updates" for learner in learners] if suite.cell_compute else []
    lines = [
        f"# {suite.title}, {steps_k} environment steps",
        "",
        f"Regenerate: {regenerate_text(args)}. Each cell: final evaluation return (the mean over "
        f"the run's evaluation episodes of the deterministic policy) at {args.steps:,} "
        "environment steps, mean ± 95% confidence interval (Student's t) over seeds 0..n-1 "
        f"(here n = {args.seeds}) trained as one vmapped population on {suite.loop}, with "
        f"each learner's presets (`jax_rl/presets/`; {preset_text(args.preset)}; "
        f"{_linked(suite.note, args.out)}). Beside "
        "each cell, its "
        "preset's relation to the task: *tuned* (a task entry, chosen on this task alone), "
        "*panel* (one setting for every task, chosen on a panel of tasks that holds this "
        "one), *held out* (chosen on other tasks only) or *defaults* (no preset); neither "
        "*tuned* nor *panel* is a held-out result. "
        f"CSVs per agent: [`{args.out.name}/`]({args.out.name}/).",
        "",
        "| task | "
        + " | ".join([*learners, *(f"{ref.column}, {steps_k}" for ref in published), *costs])
        + " |",
        "|---|" + "---|" * (len(learners) + len(published) + len(costs)),
    ]  # fmt: skip
    compute, seconds_in_all = [], 0.0
    means: dict[str, dict[str, float]] = {learner: {} for learner in learners}  # the mean rows'
    held_out: dict[str, list[str]] = {learner: [] for learner in learners}  # and their tasks
    seeds: dict[str, dict[str, list[float]]] = {learner: {} for learner in learners}
    for task in table_tasks(args):
        cells, cost_cells = [], []
        for learner in learners:
            result_dir = args.out / task / learner
            finals = final_returns(result_dir) if result_dir.is_dir() else []
            relation = tuning_of(result_dir, task, learner) if finals else ""
            cells.append(cell_text(finals) + (f" ({relation})" if relation else ""))
            if finals and task in suite.tasks:  # a task outside the suite is in no mean
                means[learner][task] = float(np.mean(finals))
                seeds[learner][task] = finals
                if relation == "held out":
                    held_out[learner].append(task)
            seconds = wall_time(result_dir) if result_dir.is_dir() else None
            if seconds is not None:
                compute.append(f"{learner} {task} {seconds / 60:.0f} min{device_note(result_dir)}")
                seconds_in_all += seconds
            if costs:
                cost_cells.append(cost_text(result_dir, suite.loop == "the host loop"))
        for ref in published:
            reference = reference_of(args, ref, task)
            mark = f" {ref.marks[task]}" if reference and task in ref.marks else ""
            cells.append(f"{reference[0]:.0f} ± {reference[1]:.0f}{mark}" if reference else "-")
        lines.append(f"| {task} | {' | '.join([*cells, *cost_cells])} |")
    if suite.mean_row:
        lines += mean_rows(args, means, len(costs), held_out)
    by_source: dict[str, list[str]] = {}  # columns citing one source share its line
    for ref in published:
        by_source.setdefault(ref.source, []).append(ref.column)
    lines += [
        "",
        "Published figures (mean ± standard deviation):",
        "",
        *(f"- {', '.join(columns)}: {source}." for source, columns in by_source.items()),
        "",
    ]
    if suite.reading:
        lines += [suite.reading, ""]
    if suite.mean_row:
        lines += [
            f"The mean rows: each learner's mean final return over the {len(suite.tasks)} "
            "tasks, beside each published column's mean over the same tasks where it has a "
            "figure on every one of them (- where not). A learner without results on all of "
            "them has a partial row instead, over the tasks it has (learners with the same "
            "tasks share one), beside the published means over those tasks. A learner with a "
            "cell on every task, some of them tuned or panel, also has a row over its held-out "
            "tasks only, with every other column over the same tasks.",
            "",
        ]
    lines += aggregate_lines(args, seeds, aggregates)
    where = f"{args.seeds} agents, on the 2-core CPU unless another device is named"
    if costs:  # each cell's minutes are in its column: here the sum
        done = f"{len(compute)} cells, {seconds_in_all / 3600:.1f} hours in all" if compute else ""
        lines.append(
            f"Compute (wall time of each population run, {where}): in each learner's "
            f"column; {done or 'none yet'}."
        )
    else:
        lines.append(
            f"Compute (wall time of each population run, {where}): "
            + ("; ".join(compute) if compute else "none yet") + "."
        )  # fmt: skip
    lines += ["", f"![learning curves]({args.out.name}.png)", ""]
    path = args.out.with_suffix(".md")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    return path


def device_note(result_dir: Path) -> str:
    """Where a run trained, as its compute says it: " on cuda:0" on an accelerator (as its
    config.json records the device), "" on the CPU or where the config does not say."""
    where = device_of(result_dir)
    return f" on {where}" if where and not where.startswith("cpu") else ""


def updates_of(result_dir: Path) -> tuple[int, int, int] | None:
    """(updates, action repeat, updates per decision) of a host-loop run, from the loop
    settings its config.json records (a run from before `action_repeat` or
    `updates_per_step` was recorded: 1). The host loop decides every K frames and makes U
    updates per decision from the first whose frame count reaches `start_timesteps`
    (random actions before), so a run of F frames makes U (ceil(F / K) - ceil(start / K) +
    1) (exact where K divides the episode's frames, as 2 does dm_control's 1000, and for a
    run resumed with its replay, the default). None where the config does not record
    those settings."""
    config = result_dir / "config.json"
    loop = json.loads(config.read_text()).get("loop", {}) if config.exists() else {}
    if "max_timesteps" not in loop or "start_timesteps" not in loop:
        return None
    frames, start = int(loop["max_timesteps"]), int(loop["start_timesteps"])
    repeat, per_decision = int(loop.get("action_repeat", 1)), int(loop.get("updates_per_step", 1))
    decisions, first = -(-frames // repeat), -(-start // repeat)  # ceilings, in integers
    return per_decision * max(0, decisions - first + 1), repeat, per_decision


def cost_text(result_dir: Path, host_loop: bool) -> str:
    """A cell's compute column: "52 min; 47.5k updates (action repeat 2)", with U > 1
    updates per decision "95.0k updates (action repeat 2, 2 per decision)" (the updates
    on the host loop only, whose count `updates_of` knows); "-" for a cell not run yet."""
    seconds = wall_time(result_dir) if result_dir.is_dir() else None
    if seconds is None:
        return "-"
    text = f"{seconds / 60:.0f} min{device_note(result_dir)}"
    counted = updates_of(result_dir) if host_loop else None
    if counted is not None:
        updates, repeat, per_decision = counted
        each = f", {per_decision} per decision" if per_decision > 1 else ""
        text += f"; {updates / 1000:.1f}k updates (action repeat {repeat}{each})"
    return text


def mean_rows(
    args: argparse.Namespace,
    means: dict[str, dict[str, float]],
    blank_cells: int,
    held_out: dict[str, list[str]],
) -> list[str]:
    """The closing rows of a suite's table (`Suite.mean_row`). `means` holds each learner's
    mean final return per suite task it has results on. The last row, always there, is
    "mean over the 28 tasks": the mean of each learner with results on all of them, and of
    each published column with a figure on all of them. Above it, a partial row per set of
    tasks that learners without all of them have ("mean over 9 of 28 tasks"), the learners
    with that set and each published column's mean over the same tasks: a part is never
    set beside the whole. "-" where a column has no such mean. `held_out` (each learner's
    tasks whose preset was chosen elsewhere) adds, for each learner with results on every
    task and a task tuned on, a row over its held-out tasks ("mean over TD3's 22 held-out
    tasks"), every learner with all tasks and each published column over those same tasks:
    the figure that tuning did not touch, beside the others on equal ground."""
    suite, tasks = args.suite, args.suite.tasks

    def row(label: str, over: Sequence[str], members: Sequence[str]) -> str:
        cells = [
            f"{np.mean([means[learner][t] for t in over]):.0f}" if learner in members else "-"
            for learner in suite.learners
        ]
        for ref in suite.references:
            figures = [reference_of(args, ref, t) for t in over]
            known = [f[0] for f in figures if f is not None]
            cells.append(f"{np.mean(known):.0f}" if len(known) == len(over) else "-")
        return f"| {label} | {' | '.join([*cells, *[''] * blank_cells])} |"

    partial: dict[tuple[str, ...], list[str]] = {}  # the tasks -> the learners with them
    for learner in suite.learners:
        has = tuple(t for t in tasks if t in means[learner])
        if 0 < len(has) < len(tasks):
            partial.setdefault(has, []).append(learner)
    rows = [
        row(f"mean over {len(has)} of {len(tasks)} tasks (partial: {', '.join(members)})",
            has, members)
        for has, members in partial.items()
    ]  # fmt: skip
    full = [learner for learner in suite.learners if len(means[learner]) == len(tasks)]
    for learner in full:
        kept = held_out[learner]
        if kept and len(kept) < len(tasks):  # all held out: the whole row says it
            rows.append(row(f"mean over {learner}'s {len(kept)} held-out tasks", kept, full))
    return [*rows, row(f"**mean over the {len(tasks)} tasks**", tasks, full)]


def published_seeds(args: argparse.Namespace, ref: Reference) -> dict[str, list[float]] | None:
    """`ref`'s per-seed returns (task -> each seed's), where it published them at these steps."""
    if ref.seeds is None or args.steps != args.suite.reference_steps:
        return None
    text = (ROOT / "docs" / "results" / ref.seeds).read_text().splitlines()
    rows = csv.DictReader(line for line in text if line and not line.startswith("#"))
    return {row["task"]: [float(v) for k, v in row.items() if k != "task"] for row in rows}


@dataclasses.dataclass(frozen=True)
class AggregateInputs:
    """What a table's aggregates are made of: the rectangular score matrices (our learners'
    and the per-seed published columns' with results on every task of the suite), the
    learners without, and the published columns of means only."""

    matrices: list[ScoreMatrix]  # in the table's column order
    incomplete: dict[str, int]  # learner -> the suite's tasks it has cells on (fewer than all)
    means_only: list[Reference]  # published columns without per-seed figures


def aggregate_inputs(
    args: argparse.Namespace, finals: dict[str, dict[str, list[float]]]
) -> AggregateInputs:
    """The aggregates' inputs from `finals` (learner -> task -> each seed's final return)."""
    from jax_rl.tools import aggregates

    suite, tasks = args.suite, args.suite.tasks
    normalisation = aggregates.NORMALISATIONS[str(suite.normalisation)]
    matrices, incomplete = [], {}
    for learner in suite.learners:
        has = [t for t in tasks if finals.get(learner, {}).get(t)]
        if len(has) == len(tasks):
            matrices.append(aggregates.score_matrix(learner, finals[learner], tasks, normalisation))
        else:
            incomplete[learner] = len(has)
    means_only = []
    for ref in suite.references:
        per_seed = published_seeds(args, ref)
        if per_seed is None:
            means_only.append(ref)
        elif all(t in per_seed for t in tasks):
            matrices.append(aggregates.score_matrix(ref.column, per_seed, tasks, normalisation))
    return AggregateInputs(matrices, incomplete, means_only)


def aggregate_lines(
    args: argparse.Namespace, finals: dict[str, dict[str, list[float]]], computed: bool
) -> list[str]:
    """The aggregates block of a suite with a `normalisation` (`jax_rl.tools.aggregates`):
    its rows (`aggregate_rows`), the notes under them (`aggregate_notes`) and the profile
    figure. Not `computed` (after each cell of a sitting): one line saying when it comes."""
    suite, tasks = args.suite, args.suite.tasks
    if suite.normalisation is None:
        return []
    lead = f"Aggregates over the {len(tasks)} tasks"
    if not computed:
        return [f"{lead}: written when the sitting ends, or at once with `--table_only`.", ""]
    from jax_rl.tools import aggregates

    normalisation = aggregates.NORMALISATIONS[suite.normalisation]
    inputs = aggregate_inputs(args, finals)
    intro = (
        f"{lead} (`python -m jax_rl.tools.aggregates`; what each figure is: "
        "[aggregates.md](../aggregates.md)): each final return normalised as "
        f"{normalisation.description}; one seeds x tasks matrix per learner; each figure "
        "rliable's point estimate and its 95% stratified-bootstrap interval "
        f"({args.bootstrap_reps} resamples of the seeds within each task, percentile, numpy "
        f"seed {aggregates.SEED}). IQM: the mean of the middle half of all runs' scores; mean "
        "and median: of the tasks' mean scores; optimality gap: the mean shortfall of the "
        "runs' scores below 1 (lower is better). A learner has a row once it has a cell on "
        "every task."
    )
    lines = [_linked(intro, args.out), "", *aggregate_rows(args, inputs), ""]
    notes = aggregate_notes(args, inputs)
    lines += [_linked(notes, args.out), ""] if notes else []
    if inputs.matrices:
        lines += [
            "Performance profiles: the fraction of all runs (every seed on every task) whose "
            "score exceeds each threshold, with 95% stratified-bootstrap bands; a profile "
            "above another everywhere dominates it.",
            "",
            f"![performance profiles]({profiles_path(args).name})",
            "",
        ]
    return lines


def aggregate_rows(args: argparse.Namespace, inputs: AggregateInputs) -> list[str]:
    """The aggregates' table: a row per score matrix, IQM, mean, median and optimality gap
    with their intervals; a row per published column of means on every task, its mean of
    them alone."""
    from jax_rl.tools import aggregates

    suite, tasks = args.suite, args.suite.tasks
    rows = [
        "| learner | seeds x tasks | " + " | ".join(aggregates.METRICS) + " |",
        "|---|---|" + "---|" * len(aggregates.METRICS),
    ]
    published = {ref.column for ref in suite.references}
    for m in inputs.matrices:
        figures = aggregates.aggregates(m.scores, args.bootstrap_reps)
        label = f"{m.learner} (published seeds)" if m.learner in published else m.learner
        cells = [figures[name].text() for name in aggregates.METRICS]
        rows.append(f"| {label} | {m.shape_text()} | {' | '.join(cells)} |")
    normalisation = aggregates.NORMALISATIONS[str(suite.normalisation)]
    for ref in whole_means(args, inputs):
        means = {t: [ref.values[t][0]] for t in tasks}
        row = aggregates.score_matrix(ref.column, means, tasks, normalisation)
        mean = aggregates.mean_of_means(row.scores)
        rows.append(
            f"| {ref.column} (published means) | means of {len(tasks)} | - | {mean:.2f} | - | - |"
        )
    return rows


def whole_means(args: argparse.Namespace, inputs: AggregateInputs) -> list[Reference]:
    """The published columns of means only with a figure on every task at these steps."""
    tasks = args.suite.tasks
    return [r for r in inputs.means_only if all(reference_of(args, r, t) for t in tasks)]


def aggregate_notes(args: argparse.Namespace, inputs: AggregateInputs) -> str:
    """The paragraph under the aggregates' rows: who has no row and why, where the published
    seeds come from, and the suite's probabilities of improvement."""
    from jax_rl.tools import aggregates

    suite, tasks = args.suite, args.suite.tasks
    notes = [
        f"{learner} has cells on {count} of the {len(tasks)} tasks: no row yet."
        for learner, count in inputs.incomplete.items()
    ]
    columns = {m.learner for m in inputs.matrices}
    notes += [
        f"{ref.column}'s seeds: [{ref.seeds}]({ref.seeds})."
        for ref in suite.references
        if ref.column in columns and ref.seeds
    ]
    whole = whole_means(args, inputs)
    if whole:
        normalisation = aggregates.NORMALISATIONS[str(suite.normalisation)]
        itself = [  # the column whose figures are the divisors: 1 on every task
            r.column
            for r in whole
            if all(normalisation.divisor(t) == r.values[t][0] for t in tasks)
        ]
        own = (
            f" ({itself[0]}'s is 1 by construction: its figures are the divisors)" if itself else ""
        )
        notes.append(
            f"{' and '.join(r.column for r in whole)} published a mean and a spread per task, "
            "no seeds: the mean over the tasks of their published means only, without an "
            f"interval or the other aggregates{own}."
        )
    partial = [  # at other steps than theirs, nothing of theirs is in the table to speak of
        r
        for r in inputs.means_only
        if r not in whole and any(reference_of(args, r, t) for t in tasks)
    ]
    if partial:
        counts = sorted({sum(reference_of(args, r, t) is not None for t in tasks) for r in partial})
        notes.append(
            f"{' and '.join(r.column for r in partial)} published a mean and a spread per task "
            f"only, on {' or '.join(map(str, counts))} of the {len(tasks)} tasks: no aggregate "
            "(a figure over some tasks is not set beside one over all)."
        )
    known = {m.learner: m for m in inputs.matrices}
    reps = args.bootstrap_reps
    chances = [
        f"P({x} > {y}) = {aggregates.improvement(known[x].scores, known[y].scores, reps).text()}"
        for x, y in suite.improvements
        if x in known and y in known
    ]
    if chances:
        notes.append(
            f"Probability of improvement, with its 95% interval: {'; '.join(chances)}: the "
            "chance that a seed of the first, on a task drawn at random, scores above a seed "
            "of the second (ties count half)."
        )
    return " ".join(notes)


def profiles_path(args: argparse.Namespace) -> Path:
    return args.out.with_name(f"{args.out.name}_profiles.png")


def suite_finals(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    """learner -> each of the suite's tasks it has a cell on -> each seed's final return."""
    finals: dict[str, dict[str, list[float]]] = {learner: {} for learner in args.suite.learners}
    for learner in args.suite.learners:
        for task in args.suite.tasks:
            result_dir = args.out / task / learner
            returns = final_returns(result_dir) if result_dir.is_dir() else []
            if returns:
                finals[learner][task] = returns
    return finals


def write_profiles(args: argparse.Namespace) -> Path | None:
    """<out>_profiles.png: the performance profiles of the aggregates block (a suite with a
    `normalisation`), each learner in its colour, a per-seed published column in its
    learner's, with its line style in the learning curves; None where nothing has a row."""
    if args.suite.normalisation is None:
        return None
    from jax_rl.tools import aggregates

    inputs = aggregate_inputs(args, suite_finals(args))
    if not inputs.matrices:
        return None
    colors = learner_colors(args.suite)
    styles = {}
    for ref, style in zip(args.suite.references, itertools.cycle(REFERENCE_STYLES)):
        colors[ref.column], styles[ref.column] = colors.get(ref.learner, "grey"), style
    normalisation = aggregates.NORMALISATIONS[args.suite.normalisation]
    tasks = len(args.suite.tasks)
    return aggregates.plot_profiles(
        inputs.matrices,
        profiles_path(args),
        f"{args.suite.title}: performance profiles over the {tasks} tasks\n"
        "95% stratified-bootstrap bands",
        rf"score $\tau$ ({normalisation.short})",
        args.bootstrap_reps,
        colors=colors,
        linestyles=styles,
    )


def learner_colors(suite: Suite) -> dict[str, str]:
    """One colour per learner of the suite, the same in every panel (matplotlib's cycle in
    the suite's order), so that a panel without TD3 does not paint MPO in TD3's blue."""
    return {learner: f"C{i}" for i, learner in enumerate(suite.learners)}


def write_figure(args: argparse.Namespace) -> Path | None:
    """<out>.png: one panel per task, each learner's mean with its 95% CI band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [t for t in table_tasks(args) if (args.out / t).is_dir()]
    if not tasks:
        return None
    styled = list(zip(args.suite.references, itertools.cycle(REFERENCE_STYLES)))
    cols = min(3 if len(tasks) <= 12 else 4, len(tasks))  # 28 panels: 7 rows, not 10
    rows = -(-len(tasks) // cols)
    size = (max(4 * cols, 6), 3.2 * rows + 0.4)
    fig, axes = plt.subplots(rows, cols, figsize=size, dpi=110, squeeze=False)
    colors = learner_colors(args.suite)
    for ax, task in zip(axes.flat, tasks, strict=False):
        for learner in args.suite.learners:
            paths = sorted((args.out / task / learner).rglob("evaluations.csv"))
            if not paths:
                continue
            curve = plot.summarise({learner: paths})[learner]
            color = colors[learner]
            ax.plot(curve["steps"], curve["mean"], color=color, label=f"{learner} ({len(paths)})")
            ax.fill_between(
                curve["steps"], curve["mean"] - curve["ci95"], curve["mean"] + curve["ci95"],
                color=color, alpha=0.2,
            )  # fmt: skip
        for ref, style in styled:
            reference = reference_of(args, ref, task)
            if reference:  # in its learner's colour, whether or not that learner ran here
                color = colors.get(ref.learner, "grey")
                ax.axhline(reference[0], color=color, linestyle=style, linewidth=1)
        ax.set_title(task, fontsize=10)
        ax.set_xlabel("environment steps")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(tasks) :]:
        ax.axis("off")
    lines = ", ".join(f"{style} {ref.column}" for ref, style in styled)
    fig.suptitle(
        f"{args.suite.title}\neval return: mean, 95% CI over seeds; published ({lines}) "
        "in its learner's colour",
        fontsize=10,
    )
    # The two-line title keeps a fixed 0.6 inch above the panels: tight_layout alone lays the
    # first row's titles under it once the figure is tall (the 28-task figure, 7 rows).
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / size[1]))
    path = args.out.with_suffix(".png")
    fig.savefig(path)
    plt.close(fig)
    return path


def to_train(
    args: argparse.Namespace, task: str, learner: str, label: str, settings: dict[str, Any]
) -> bool:
    """Whether the cell trains this sitting: not when its results under `--out` ran with
    the settings it resolves to now."""
    result_dir = args.out / task / learner
    if not finished(result_dir, args.seeds, args.steps):
        return True
    changes = changed_settings(result_dir / "config.json", settings)
    if not changes:
        print(f"{label} {learner} on {task}: already in {args.out}; skipped")
        return False
    print(
        f"{label} {learner} on {task}: its results in {args.out} ran with other "
        f"settings ({'; '.join(changes)}); training it again",
        flush=True,
    )
    return True


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    check_table_preset(args)
    cells = [(t, p) for t in args.tasks for p in args.learners]
    failed = []
    if args.adopt is not None:
        ((task, learner),) = cells
        problem = adopt(args, args.adopt, task, learner)
        if problem:
            print(f"error: --adopt: {problem}", file=sys.stderr)
            return 2
        print(f"{learner} on {task}: adopted {args.adopt} into {args.out / task / learner}")
    elif not args.table_only:
        if args.engine == "ray":  # joined first: an unreachable cluster stops it at once
            cluster.connect(args.address)
        import jax

        # This process only reads settings (the runs are subprocesses): keep it off any
        # accelerator, whose memory the runs need.
        jax.config.update("jax_platforms", "cpu")
        todo = []
        for i, (task, learner) in enumerate(cells, 1):
            label = f"[{i}/{len(cells)}]"
            settings = resolved_settings(args, task, learner)
            if not to_train(args, task, learner, label, settings):
                continue
            if args.engine == "ray":
                todo.append(Cell(label, task, learner, settings))
                continue
            if not train_cell(args, task, learner, label, settings):
                failed.append(f"{learner} on {task}")
            write_table(args, aggregates=False)
        if todo:
            failed = train_on_ray(args, todo)
    table = write_table(args)
    figures = [path for path in (write_figure(args), write_profiles(args)) if path]
    print(f"wrote {table}" + "".join(f" and {path}" for path in figures))
    if failed:
        print(f"error: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


# --- --engine ray: the cells as Ray tasks (jax_rl.run.cluster) ---------------------------------


@dataclasses.dataclass(frozen=True)
class Cell:
    """A cell that trains this sitting, with the settings its run resolves to."""

    label: str  # "[2/6]"
    task: str
    learner: str
    settings: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.learner}-{self.task}"


@dataclasses.dataclass(frozen=True)
class CellResult:
    """What a cell's Ray task hands back: the run's exit code and its result files."""

    code: int
    files: dict[str, bytes]  # `result_files`, by their path in the run's folder
    seconds: float


def train_on_ray(args: argparse.Namespace, cells: Sequence[Cell]) -> list[str]:
    """Train `cells` as Ray tasks, all at once where the cluster has the cores; each
    finished cell's results go under `--out` and into the table as it ends. The failed."""
    # Workers start elsewhere (another folder, another machine): paths must be absolute.
    args = argparse.Namespace(**{**vars(args), "runs_dir": args.runs_dir.absolute()})
    gpus = cluster.gpus_per_job(args.suite.loop == "the device pipeline")
    submissions = []
    for cell in cells:
        job = cluster.Job(
            key=cell.key,
            label=f"{cell.label} {cell.learner} on {cell.task}",
            watch=run_dir_of(args, cell.task, cell.learner),
            log=log_of(args, cell.task, cell.learner),
            total_steps=args.steps,
            gpus=gpus,
            progress_every=args.progress_every,
            kill_at_step=cluster.kill_at_step_of(cell.key),
        )
        submissions.append(cluster.Submission(job, train_cell_in_worker, (args, cell)))
    by_key = {cell.key: cell for cell in cells}

    def finish(job: cluster.Job, result: CellResult) -> bool:
        cell = by_key[job.key]
        if result.code != 0:
            print(f"{job.label}: exit code {result.code}; see {job.log}", flush=True)
            return False
        dest = args.out / cell.task / cell.learner
        shutil.rmtree(dest, ignore_errors=True)
        for name, data in result.files.items():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes(data)
        finals = final_returns(dest)
        print(
            f"{job.label}: done in {result.seconds:.0f} s, final returns "
            f"{' / '.join(f'{r:.0f}' for r in finals)}",
            flush=True,
        )
        write_table(args, aggregates=False)
        return True

    failed = cluster.run_jobs(submissions, finish, args.runs_dir / "ray-events.jsonl")
    return [f"{by_key[job.key].learner} on {by_key[job.key].task}" for job in failed]


def train_cell_in_worker(
    job: cluster.Job, board: Any, args: argparse.Namespace, cell: Cell
) -> CellResult:
    """A cell as a Ray task: `train_cell`'s run, in this worker process (so that a lost
    worker is a lost run, which Ray retries and which continues from its checkpoint)."""

    def work(say: Callable[[str], None]) -> CellResult:
        flags = prepare_run(args, cell.task, cell.learner, cell.settings, say)
        entry = importlib.import_module(f"jax_rl.{Path(args.suite.entry_point).stem}")
        start = time.perf_counter()
        code = cluster.exit_code(lambda: entry.main(flags))
        run_dir = run_dir_of(args, cell.task, cell.learner)
        files = {str(p.relative_to(run_dir)): p.read_bytes() for p in result_files(run_dir)}
        return CellResult(code, files if code == 0 else {}, time.perf_counter() - start)

    return cluster.run_job(job, board, work)


if __name__ == "__main__":
    from jax_rl.io import quiet

    quiet.install()  # reading a cell's settings opens its task: no settotalmass warning
    # Here, not in main(): a process that calls main() keeps its own SIGTERM handling.
    signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        sys.exit(main())
    except (Stopped, KeyboardInterrupt) as stop:
        print(
            "stopped: any run in progress saved its checkpoint first; the same command continues",
            file=sys.stderr,
        )
        sys.exit(128 + (signal.SIGTERM if isinstance(stop, Stopped) else signal.SIGINT))
