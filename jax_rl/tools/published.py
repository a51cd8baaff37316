"""Published columns of the results tables: whose figures, from where.

Kept apart from `jax_rl.tools.results` (which builds the tables) so that
`jax_rl.tools.aggregates` can normalise scores by a published column without importing the
table writer, which imports it.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Reference:
    """One published column of a table: whose figures, beside which learner, from where."""

    column: str  # the table's header, e.g. "CURL State SAC"
    learner: str  # the learner it is set beside (its colour in the figure)
    values: dict[str, tuple[float, float]]  # task -> (mean, spread as published)
    source: str  # the citation, and what its spread and seeds are
    marks: dict[str, str] = dataclasses.field(default_factory=dict)
    """task -> a mark after its figure, which `source` explains (e.g. fewer seeds there)"""
    seeds: str | None = None
    """a CSV under docs/results/ of each seed's published return per task at the suite's
    `reference_steps` (task,seed_0,...; '#' lines name its source), which gives the column
    the aggregates our learners get; None where only the mean and spread were published"""


# Tianshou's MuJoCo benchmark (thu-ml/tianshou, examples/mujoco/benchmark/<Env>-v3/<algo>/
# test_rew_10seeds.csv): the test return at 200k environment steps, mean and standard
# deviation over 10 seeds, on Gym's v3 tasks; ours are Gymnasium's v5 versions of the same
# tasks, so the comparison is close, not exact.
TIANSHOU_SOURCE = (
    "Tianshou's MuJoCo benchmark (thu-ml/tianshou, examples/mujoco/benchmark/<Env>-v3/"
    "<algo>/test_rew_10seeds.csv), Gym v3, 10 seeds, at 200k env steps"
)
TIANSHOU_200K = (
    Reference(
        "Tianshou SAC",
        "SAC",
        {
            "HalfCheetah-v5": (8207.6, 928.3),
            "Hopper-v5": (3234.4, 314.2),
            "Humanoid-v5": (767.9, 306.8),
            "Walker2d-v5": (2530.5, 1300.1),
            "Ant-v5": (2132.6, 977.2),
        },
        TIANSHOU_SOURCE,
    ),
    Reference(
        "Tianshou TD3",
        "TD3",
        {
            "HalfCheetah-v5": (6720.7, 617.2),
            "Hopper-v5": (887.2, 649.3),
            "Humanoid-v5": (831.2, 115.8),
            "Walker2d-v5": (941.3, 365.0),
            "Ant-v5": (1987.1, 656.8),
        },
        TIANSHOU_SOURCE,
    ),
)
