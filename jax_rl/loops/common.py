"""What both loops share: checks of their configs and the on-device metric sums."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import signal
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, TypeVar

import jax
import jax.numpy as jnp

from jax_rl.core import replay as replay_lib
from jax_rl.core.transition import Transition
from jax_rl.io.checkpoint import Checkpointer, check_same_run

MAX_DEFAULT_REPLAY = 1_000_000
MAX_SEED = 2**31  # NumPy and dm_control seeds are 32-bit; evaluation uses seed + 10,000


def check_positive_ints(config: Any, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def replay_capacity(max_timesteps: int, replay_size: int | None) -> int:
    """The replay capacity asked for, or by default min(max_timesteps, 1M)."""
    if replay_size is not None:
        return replay_size
    return min(max_timesteps, MAX_DEFAULT_REPLAY)


def check_collection(config: Any) -> None:
    """Checks of seed, max_timesteps, start_timesteps, batch_size and replay_size together."""
    if not isinstance(config.seed, int) or not 0 <= config.seed < MAX_SEED:
        raise ValueError(f"seed must be an integer in [0, {MAX_SEED}), got {config.seed!r}")
    if config.replay_size is not None and (
        not isinstance(config.replay_size, int) or config.replay_size <= 0
    ):
        raise ValueError(f"replay_size must be a positive integer, got {config.replay_size!r}")
    if config.start_timesteps < config.batch_size:
        raise ValueError(
            f"start_timesteps ({config.start_timesteps}) must be at least batch_size "
            f"({config.batch_size}): the first update samples a full batch"
        )
    if config.start_timesteps > config.max_timesteps:
        raise ValueError(
            f"start_timesteps ({config.start_timesteps}) exceeds max_timesteps "
            f"({config.max_timesteps}): the run would never learn"
        )
    if config.capacity < config.batch_size:
        raise ValueError(
            f"replay_size ({config.capacity}) must be at least batch_size ({config.batch_size})"
        )


def check_learner(algo: ModuleType, algo_config: Any, n_step: int | None) -> None:
    """Raise ValueError (one line) where the learner asks for what the loop cannot give:
    sub-trajectories (`algos.horizon` > 1, MR.Q) on the device pipeline (`n_step` None),
    or on a host loop that stores n-step transitions (their rows no longer follow)."""
    from jax_rl import algos

    if algos.horizon(algo, algo_config) == 1:
        return
    part = "share_horizon" if getattr(algo_config, "share_horizon", 1) > 1 else "representation mrq"
    if n_step is None:
        raise ValueError(
            f"{part} trains on sub-trajectories of the replay, which the host "
            "loops (main_dm_control.py, main_gym.py) hand out and the device pipeline does not"
        )
    if n_step > 1:
        raise ValueError(
            f"{part} forms its own multi-step returns from "
            f"one-step rows: n_step must be 1, got {n_step}"
        )


def zero_metrics(algo: ModuleType, agent: Any, batch: Transition, key: jax.Array) -> dict:
    """Zeros shaped like the metrics `algo.update` returns (nothing is computed), without
    the priorities a prioritised learner returns (`replay.PRIORITY_KEY`).

    The shapes are traced once per learner and abstract arguments (structure, static
    configuration, shapes and dtypes) and kept: an initialisation is traced twice (for
    its population axes, then compiled), and tracing an update takes most of a second."""
    leaves, tree = jax.tree_util.tree_flatten((agent, batch, key))
    avals = tuple(jax.typeof(leaf) for leaf in leaves)
    try:
        shapes = _metric_shapes(algo, tree, avals)
    except TypeError:  # a static field that cannot be hashed: trace without keeping it
        shapes = _metric_shapes.__wrapped__(algo, tree, avals)
    return {k: jnp.zeros(shape, dtype) for k, (shape, dtype) in shapes}


@functools.lru_cache(maxsize=64)
def _metric_shapes(
    algo: ModuleType, tree: Any, avals: tuple[Any, ...]
) -> tuple[tuple[str, tuple[tuple[int, ...], Any]], ...]:
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
    _, shapes = jax.eval_shape(algo.update, *jax.tree_util.tree_unflatten(tree, structs))
    shapes, _ = replay_lib.split_priorities(shapes)
    return tuple((k, (v.shape, v.dtype)) for k, v in shapes.items())


class HasMetricSums(Protocol):
    metric_sums: dict[str, jax.Array]
    num_updates: jax.Array

    def replace(self, **changes: Any) -> Any: ...


CarryT = TypeVar("CarryT", bound=HasMetricSums)


def pull_metrics(carry: CarryT) -> tuple[CarryT, list[dict[str, float]]]:
    """Per agent, the averages of the metrics summed since the last call; and the carry
    with the sums reset.

    `carry` is a population's: metric sums [P], one shared update count. The
    one device-to-host read of a logging point.
    """
    sums, count = jax.device_get((carry.metric_sums, carry.num_updates))
    num_agents = len(next(iter(sums.values()))) if sums else 1
    rows = [
        {k: float(v[i]) / max(int(count), 1) for k, v in sums.items()} for i in range(num_agents)
    ]
    zeroed = jax.tree_util.tree_map(jnp.zeros_like, carry.metric_sums)
    return carry.replace(metric_sums=zeroed, num_updates=jnp.zeros_like(carry.num_updates)), rows


# --- Checkpoints, signals and the non-finite guard, shared by both loops -----------------


class Interrupted(Exception):
    """SIGINT or SIGTERM stopped the run after a checkpoint was written."""

    def __init__(self, signum: int, step: int, directory: Path) -> None:
        self.signum, self.step, self.directory = signum, step, directory
        name = signal.Signals(signum).name
        super().__init__(f"{name} at step {step}: checkpoint saved in {directory}")


class NonFiniteError(Exception):
    """A loss or parameter went NaN or infinite; the last good checkpoint is kept."""

    def __init__(self, step: int, what: str, last_checkpoint: int | None) -> None:
        self.step, self.what, self.last_checkpoint = step, what, last_checkpoint
        kept = (
            f"the last good checkpoint (step {last_checkpoint}) is intact"
            if last_checkpoint is not None
            else "no checkpoint had been written yet"
        )
        super().__init__(f"non-finite {what} at step {step}; stopped, {kept}")


@dataclasses.dataclass
class RunControl:
    """How a loop checkpoints and resumes. Without one, a loop writes no checkpoint.

    `identity` names the run's settings (flag -> value); resuming refuses a
    checkpoint whose identity differs other than in `may_differ`.
    """

    checkpointer: Checkpointer
    every: int = 10_000
    """environment steps between checkpoints (one is also written at the end and on a signal)"""
    keep_replay: bool = True
    """store the replay buffer; without it a resumed run refills the buffer first"""
    resume: bool = False
    identity: dict[str, Any] = dataclasses.field(default_factory=dict)
    may_differ: frozenset[str] = frozenset({"max_timesteps"})
    defaults: dict[str, Any] = dataclasses.field(default_factory=dict)
    """each setting's default, for a checkpoint written before the setting existed"""
    kill_at: int | None = None
    """fault injection for tests: SIGKILL this process right after step `kill_at`'s checkpoint
    work (set by the CLIs from the JAX_RL_KILL_AT_STEP environment variable)"""

    def __post_init__(self) -> None:
        if not isinstance(self.every, int) or self.every <= 0:
            raise ValueError(f"checkpoint_every must be a positive integer, got {self.every!r}")

    last_saved: int | None = None
    """the step of the newest checkpoint this run wrote or resumed from"""

    def save(self, step: int, params_finite: bool, tree: Any, meta: dict[str, Any]) -> None:
        """Write checkpoint `step`, unless the parameters are no longer finite: then the
        last good checkpoint is kept and NonFiniteError raised."""
        if not params_finite:
            raise NonFiniteError(step, "parameter", self.last_saved)
        self.checkpointer.save(step, tree, {**meta, "identity": self.identity})
        self.last_saved = step

    def load(self, template_for: Callable[[dict[str, Any]], Any]) -> tuple[Any, dict[str, Any]]:
        """The newest checkpoint, shaped like `template_for(its meta)`, after checking that
        it belongs to this run; and its meta."""
        meta = self.checkpointer.read_meta()
        check_same_run(meta["identity"], self.identity, set(self.may_differ), self.defaults)
        restored, meta = self.checkpointer.restore(template_for(meta), step=meta["step"])
        self.last_saved = meta["step"]
        return restored, meta

    def after_step(self, step: int) -> None:
        if self.kill_at is not None and step >= self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


class StopSignals:
    """Context manager: SIGINT/SIGTERM set `received` instead of killing the run.

    The loop checks `received` between steps, writes a checkpoint and stops.
    A second signal of the same kind stops at once (the default behaviour).
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.received is not None:
            signal.signal(signum, self._previous.get(signum, signal.SIG_DFL))
            signal.raise_signal(signum)
            return
        self.received = signum

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def first_non_finite(metrics: dict[str, float]) -> str | None:
    """The name of the first non-finite learner metric (not the episode return), or None."""
    for name, value in metrics.items():
        if name != "episode_return" and not math.isfinite(value):
            return name
    return None


def check_finite(
    step: int, metrics: dict[str, float], params_finite: bool, last: int | None
) -> None:
    """Raise NonFiniteError naming the first non-finite metric (or the parameters)."""
    name = first_non_finite(metrics)
    if name is not None:
        raise NonFiniteError(step, name, last)
    if not params_finite:
        raise NonFiniteError(step, "parameter", last)


class DivergenceWatch:
    """The non-finite guard of a population, shared by both loops.

    One agent (P = 1): the first non-finite loss or parameter stops the run
    (NonFiniteError, naming it). Several: an agent that goes non-finite is
    reported once and the others go on; the run stops only when none is left.
    """

    def __init__(self, seeds: Sequence[int], message: Callable[[str], None]) -> None:
        self.seeds = list(seeds)
        self.message = message
        self.diverged: set[int] = set()

    def check(
        self,
        step: int,
        rows: Sequence[dict[str, float]],
        params_ok: Sequence[bool],
        last_saved: int | None,
    ) -> None:
        if len(self.seeds) == 1:
            check_finite(step, rows[0], params_ok[0], last_saved)
            return
        for i, (row, ok) in enumerate(zip(rows, params_ok, strict=True)):
            if (not ok or first_non_finite(row) is not None) and i not in self.diverged:
                self.mark(i, step)
        if len(self.diverged) == len(self.seeds):
            raise NonFiniteError(step, "losses or parameters in every agent", last_saved)

    def mark(self, i: int, step: int) -> None:
        """Report agent i as diverged at `step` (once)."""
        if i in self.diverged:
            return
        self.diverged.add(i)
        self.message(
            f"agent {i} (seed {self.seeds[i]}) diverged at step {step}: non-finite losses "
            "or parameters; its logs go on with NaN, the other agents continue"
        )
