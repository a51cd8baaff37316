"""Functional ring buffer of `Transition`s.

A static `ReplaySpec` (capacity and sizes) plus a pytree `ReplayState` (the
arrays, the next write position and the number of valid rows). `insert` writes
a batch of rows at `position % capacity` with one scatter, so its cost is
O(batch) whatever the capacity -- provided the caller donates the state to the
jitted function that inserts (otherwise XLA must copy the whole buffer to keep
the caller's copy alive). `sample` draws uniform indices in [0, size), or by
priority (LAP), optionally faded by each row's age (DR.Q, `Fade`).
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jax_rl.core.transition import Transition

_BYTES_PER_FLOAT = 4
# The metrics key under which a learner's update returns the new priorities [B] of the
# rows it was given (prioritised replay); the loops take it out before summing metrics.
PRIORITY_KEY = "replay/priority"
# Leave room for everything else the process holds (parameters, XLA buffers,
# the simulator): a buffer may take at most this fraction of free memory.
_MAX_FRACTION_OF_FREE_MEMORY = 0.8


class ReplayTooLargeError(ValueError):
    """The requested buffer would not fit in the memory that is free."""


@dataclasses.dataclass(frozen=True)
class ReplaySpec:
    """Static description of a buffer: what it holds and how many rows."""

    capacity: int
    obs_size: int
    action_size: int
    prioritized: bool = False

    def __post_init__(self) -> None:
        for name in ("capacity", "obs_size", "action_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"replay {name} must be a positive integer, got {value!r}")

    @property
    def nbytes(self) -> int:
        """Bytes the arrays need: obs and next_obs, action, reward, discount (and the
        priority when prioritised)."""
        floats_per_row = 2 * self.obs_size + self.action_size + 2 + int(self.prioritized)
        return self.capacity * floats_per_row * _BYTES_PER_FLOAT


class ReplayState(flax.struct.PyTreeNode):
    """The buffer's contents. `data` fields have a leading [capacity] axis."""

    data: Transition
    position: jax.Array  # int32 scalar: the next row to write.
    size: jax.Array  # int32 scalar: rows written so far, at most capacity.
    # Prioritised replay only (else None): [capacity] float32, 0 where never written,
    # and the largest priority written so far (new rows get it; starts at 1).
    priority: jax.Array | None = None
    max_priority: Any = None  # a jax.Array where priority is one

    @property
    def capacity(self) -> int:
        return self.data.reward.shape[0]


def free_memory_bytes(device: jax.Device | None = None) -> int | None:
    """Memory free for a new buffer on `device` (host RAM for CPU devices).

    Returns None when it cannot be determined.
    """
    device = device or jax.devices()[0]
    if device.platform != "cpu":
        stats = device.memory_stats() or {}
        if "bytes_limit" in stats:
            return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
        return None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def check_fits(spec: ReplaySpec, free_bytes: int | None = None) -> None:
    """Raise `ReplayTooLargeError` if `spec` needs more than the memory free."""
    free_bytes = free_memory_bytes() if free_bytes is None else free_bytes
    if free_bytes is None:
        return
    allowed = int(free_bytes * _MAX_FRACTION_OF_FREE_MEMORY)
    if spec.nbytes > allowed:
        raise ReplayTooLargeError(
            f"a replay buffer of {spec.capacity:,} rows needs {spec.nbytes / 2**30:.2f} GiB, "
            f"but only {allowed / 2**30:.2f} GiB may be used ({free_bytes / 2**30:.2f} GiB free); "
            "ask for a smaller replay capacity"
        )


def create(spec: ReplaySpec, free_bytes: int | None = None) -> ReplayState:
    """An empty buffer, after checking that it fits in memory."""
    check_fits(spec, free_bytes)
    n = spec.capacity
    zeros = lambda *shape: jnp.zeros(shape, jnp.float32)  # noqa: E731
    data = Transition(
        obs=zeros(n, spec.obs_size),
        action=zeros(n, spec.action_size),
        reward=zeros(n),
        discount=zeros(n),
        next_obs=zeros(n, spec.obs_size),
    )
    if not spec.prioritized:
        return ReplayState(data=data, position=jnp.int32(0), size=jnp.int32(0))
    return ReplayState(
        data=data,
        position=jnp.int32(0),
        size=jnp.int32(0),
        priority=zeros(n),
        max_priority=jnp.float32(1.0),
    )


def insert(state: ReplayState, batch: Transition) -> ReplayState:
    """Write a batch of B rows (leading axis B <= capacity), wrapping around."""
    num_rows = batch.reward.shape[0]
    capacity = state.capacity
    if num_rows > capacity:
        raise ValueError(f"cannot insert {num_rows} rows into a buffer of {capacity}")
    rows = (state.position + jnp.arange(num_rows, dtype=jnp.int32)) % capacity
    data = jax.tree_util.tree_map(
        lambda stored, new: stored.at[rows].set(new.astype(stored.dtype), unique_indices=True),
        state.data,
        batch,
    )
    priority = state.priority
    if priority is not None:
        new = jnp.broadcast_to(state.max_priority, (num_rows,))
        priority = priority.at[rows].set(new, unique_indices=True)
    return state.replace(
        data=data,
        position=(state.position + num_rows) % capacity,
        size=jnp.minimum(state.size + num_rows, capacity),
        priority=priority,
    )


@dataclasses.dataclass(frozen=True)
class Fade:
    """DR.Q's faded prioritised replay (Lyu et al., 2026): sampling weighs row i's priority
    by max(decay^age_i, floor), age_i the rows written since row i (`ages`), so that old
    rows are drawn less, but never less than `floor` times their priority.

    Static (part of the compiled sampler): no `Fade` at all, not a decay of 1, is what
    keeps the plain sampler's program.
    """

    decay: float  # per row written, in (0, 1)
    floor: float  # in (0, 1]

    def __post_init__(self) -> None:
        if not 0 < self.decay < 1:
            raise ValueError(f"fade decay must be in (0, 1), got {self.decay}")
        if not 0 < self.floor <= 1:
            raise ValueError(f"fade floor must be in (0, 1], got {self.floor}")


def ages(position: jax.Array, capacity: int) -> jax.Array:
    """Rows written since each row [capacity] was, read off the ring's write position: 0
    for the newest (position - 1), capacity - 1 for the oldest. Rows never written get
    ages too; their priority is 0, so no weight reaches them."""
    return (position - 1 - jnp.arange(capacity, dtype=jnp.int32)) % capacity


def fade_weights(position: jax.Array, capacity: int, fade: Fade) -> jax.Array:
    """`Fade`'s weights [capacity] of a buffer whose next write is at `position`."""
    decayed = jnp.float32(fade.decay) ** ages(position, capacity).astype(jnp.float32)
    return jnp.maximum(decayed, jnp.float32(fade.floor))


def sample_rows(
    key: jax.Array,
    size: jax.Array,
    batch_size: int,
    priority: jax.Array | None = None,
    fade: Fade | None = None,
    position: jax.Array | None = None,
) -> jax.Array:
    """`batch_size` row indices drawn with replacement from [0, size): uniformly, or with
    `priority` [capacity] (0 on rows never written) row i with probability p_i / sum p;
    with a `fade` (and the buffer's write `position`) by p_i x `fade_weights`_i instead."""
    if priority is None:
        if fade is not None:
            raise ValueError("a faded replay fades priorities: sample with them")
        return jax.random.randint(key, (batch_size,), 0, jnp.maximum(size, 1))
    if fade is not None:
        if position is None:
            raise ValueError("a faded replay reads the ages off the write position: give it")
        # The stored priorities stay raw (what `write_priorities` and `max_priority` see):
        # the fade enters this draw alone, as in DR.Q.
        priority = priority * fade_weights(position, priority.shape[0], fade)
    # Two levels: the buffer as blocks of `width` rows; a cumulative sum over the blocks'
    # totals picks each draw's block, a cumulative sum inside that block its row. Work
    # ~ capacity / width + batch * width, least at width ~ sqrt(capacity / batch).
    capacity = priority.shape[0]
    width = block_width(capacity, batch_size)
    blocks = priority.reshape(capacity // width, width)
    cumulative = jnp.cumsum(blocks.sum(axis=1))
    draws = jax.random.uniform(key, (batch_size,)) * cumulative[-1]
    block = jnp.searchsorted(cumulative, draws, side="right")
    block = jnp.minimum(block, cumulative.shape[0] - 1)  # u * total may round to the total
    before = jnp.where(block > 0, cumulative[block - 1], 0.0)
    inside = jnp.cumsum(blocks[block], axis=1)  # [B, width]
    offset = jax.vmap(lambda c, u: jnp.searchsorted(c, u, side="right"))(inside, draws - before)
    rows = (block * width + jnp.minimum(offset, width - 1)).astype(jnp.int32)
    # Rounding may also land past the rows written; an empty buffer samples row 0.
    return jnp.minimum(rows, jnp.maximum(size - 1, 0))


def block_width(capacity: int, batch_size: int) -> int:
    """The divisor of `capacity` nearest sqrt(capacity / batch_size) (prioritised sampling's
    block width; 1 for a prime capacity, where sampling is one cumulative sum)."""
    best = max(1.0, math.sqrt(capacity / batch_size))
    divisors = [d for d in range(1, int(math.isqrt(capacity)) + 1) if capacity % d == 0]
    divisors += [capacity // d for d in divisors]
    return min(divisors, key=lambda d: (abs(math.log(d / best)), d))


def sample_indexed(
    state: ReplayState, key: jax.Array, batch_size: int, fade: Fade | None = None
) -> tuple[Transition, jax.Array]:
    """Draw `batch_size` rows, with replacement, from the rows written (uniformly, or by
    priority, faded by age with a `fade`): (the rows' transitions, their indices [B])."""
    rows = sample_rows(key, state.size, batch_size, state.priority, fade, state.position)
    return jax.tree_util.tree_map(lambda stored: stored[rows], state.data), rows


def sample(state: ReplayState, key: jax.Array, batch_size: int) -> Transition:
    """`sample_indexed` without the indices."""
    return sample_indexed(state, key, batch_size)[0]


def write_priorities(state: ReplayState, rows: jax.Array, priority: jax.Array) -> ReplayState:
    """The buffer with rows [R] given priorities [R] (where a row repeats, one of its values
    is kept) and the running maximum raised to them. A buffer without priorities: as is."""
    if state.priority is None:
        return state
    return state.replace(
        priority=state.priority.at[rows].set(priority),
        max_priority=jnp.maximum(state.max_priority, priority.max()),
    )


def insert_population(state: ReplayState, rows: Transition) -> ReplayState:
    """One row per agent (leaves [P, ...]) into a population's buffers (leaves
    [P, capacity, ...], one write position shared by all agents).

    One dynamic-update-slice per field, done in place on donated buffers (indexing
    them down to one agent, or a vmapped scatter, made XLA copy them every step).
    """
    capacity = state.data.reward.shape[1]

    def write(stored: jax.Array, new: jax.Array) -> jax.Array:
        new = jnp.asarray(new, stored.dtype).reshape(stored.shape[:1] + (1,) + stored.shape[2:])
        start = (0, state.position) + (0,) * (stored.ndim - 2)
        return jax.lax.dynamic_update_slice(stored, new, start)

    priority = state.priority
    if priority is not None:  # [P, capacity]; each agent's new row at its own maximum
        priority = jax.lax.dynamic_update_slice(
            priority, state.max_priority[:, None], (0, state.position)
        )
    return state.replace(
        data=jax.tree_util.tree_map(write, state.data, rows),
        position=(state.position + 1) % capacity,
        size=jnp.minimum(state.size + 1, capacity),
        priority=priority,
    )


def gather_population(data: Transition, rows: jax.Array) -> Transition:
    """Rows [P, B] of a population's buffers (leaves [P, capacity, ...]) -> [P, B, ...].

    One gather over the buffers seen as a single [P * capacity, ...] table. A vmapped
    per-agent gather computes the same, but XLA fused the insert that precedes it into
    the gather and then copied every buffer on every step to keep the insert in place.
    """

    def take(stored: jax.Array) -> jax.Array:
        agents, capacity = stored.shape[:2]
        table = stored.reshape((agents * capacity,) + stored.shape[2:])
        index = (jnp.arange(agents, dtype=rows.dtype)[:, None] * capacity + rows).reshape(-1)
        return table[index].reshape(rows.shape + stored.shape[2:])

    return jax.tree_util.tree_map(take, data)


def write_priorities_population(
    state: ReplayState, rows: jax.Array, priority: jax.Array
) -> ReplayState:
    """`write_priorities` for a population's buffers (priority [P, capacity]; rows and
    priority [P, B]): one scatter into the priorities seen as one [P * capacity] table,
    which XLA does in place on a donated buffer."""
    if state.priority is None:
        return state
    agents, capacity = state.priority.shape
    index = (jnp.arange(agents, dtype=rows.dtype)[:, None] * capacity + rows).reshape(-1)
    table = state.priority.reshape(-1).at[index].set(priority.reshape(-1))
    return state.replace(
        priority=table.reshape(agents, capacity),
        max_priority=jnp.maximum(state.max_priority, priority.max(axis=1)),
    )


def split_priorities(metrics: dict) -> tuple[dict, jax.Array | None]:
    """(the update's metrics without `PRIORITY_KEY`, the priorities it returned or None)."""
    metrics = dict(metrics)
    return metrics, metrics.pop(PRIORITY_KEY, None)


# --- Sub-trajectories (MR.Q's windows) -------------------------------------------------


class Window(flax.struct.PyTreeNode):
    """H consecutive rows of the buffer from each of B starts: the `Transition` fields with
    leaves [B, H, ...], and `mask` [B, H], 1 where row h still belongs to the start's
    episode: every row before it went on (discount > 0, its next_obs the next row's obs)
    and the window has not reached the write position (the oldest row, or one never
    written). mask[:, 0] is 1."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    discount: jax.Array
    next_obs: jax.Array
    mask: jax.Array


def window_transition(window: Window, discount: float, steps: jax.Array | None = None) -> Any:
    """The n-step transitions [B] of windows [B, H], in the layout of `jax_rl.loops.nstep`:
    from each start, the return over its rows still in the start's episode (m of them, and
    with `steps` [B] at most steps[b]): reward sum_{k<m} gamma^k r_k, discount
    gamma^(m-1) d_{m-1} and next_obs s'_{m-1}, the start's obs and action."""
    mask = window.mask
    if steps is not None:
        mask = mask * (jnp.arange(mask.shape[1]) < steps[:, None]).astype(mask.dtype)
    gammas = discount ** jnp.arange(mask.shape[1], dtype=jnp.float32)
    reward = (mask * gammas * window.reward).sum(axis=1)
    last = (mask.sum(axis=1).astype(jnp.int32) - 1)[:, None]
    pick = lambda x: jnp.take_along_axis(x, last, axis=1)[:, 0]  # noqa: E731
    return Transition(
        obs=window.obs[:, 0],
        action=window.action[:, 0],
        reward=reward,
        discount=discount ** last[:, 0].astype(jnp.float32) * pick(window.discount),
        next_obs=jnp.take_along_axis(window.next_obs, last[:, :, None], axis=1)[:, 0],
    )


def window_rows(rows: jax.Array, horizon: int, capacity: int) -> jax.Array:
    """Starts [...] -> the rows of their windows [..., H], wrapping around the ring."""
    return (rows[..., None] + jnp.arange(horizon, dtype=rows.dtype)) % capacity


def window_mask(steps: Transition, rows: jax.Array, position: jax.Array) -> jax.Array:
    """`Window.mask` [..., H] of gathered rows `steps` ([..., H, ...] leaves) at `rows`.

    An episode's end is read from the rows themselves: after a terminal (discount 0) or a
    time limit the next row starts with a reset, so its obs is not the row's next_obs (the
    loops store both from the one array when an episode goes on, so they are equal bit
    for bit)."""
    same = jnp.all(steps.next_obs[..., :-1, :] == steps.obs[..., 1:, :], axis=-1)
    goes_on = same & (steps.discount[..., :-1] > 0) & (rows[..., 1:] != position)
    first = jnp.ones(goes_on.shape[:-1] + (1,), bool)
    return jnp.cumprod(jnp.concatenate([first, goes_on], axis=-1), axis=-1).astype(jnp.float32)


def gather_window(state: ReplayState, rows: jax.Array, horizon: int) -> Window:
    """The windows of `horizon` rows from starts `rows` [B] of one buffer: B * H rows
    gathered, the buffer itself never copied."""
    at = window_rows(rows, horizon, state.capacity)
    steps = jax.tree_util.tree_map(lambda stored: stored[at], state.data)
    return Window(**_fields(steps), mask=window_mask(steps, at, state.position))


def gather_window_population(state: ReplayState, rows: jax.Array, horizon: int) -> Window:
    """`gather_window` for a population's buffers (leaves [P, capacity, ...], rows [P, B],
    one shared write position): windows [P, B, H, ...], by `gather_population`."""
    capacity = state.data.reward.shape[1]
    at = window_rows(rows, horizon, capacity)  # [P, B, H]
    flat = gather_population(state.data, at.reshape(at.shape[0], -1))
    steps = jax.tree_util.tree_map(lambda x: x.reshape(at.shape + x.shape[2:]), flat)
    return Window(**_fields(steps), mask=window_mask(steps, at, state.position))


def sample_batch(state: ReplayState, key: jax.Array, batch_size: int, horizon: int = 1) -> Any:
    """`sample` (horizon 1), else B windows of `horizon` rows from uniform starts."""
    if horizon == 1:
        return sample(state, key, batch_size)
    return gather_window(state, sample_rows(key, state.size, batch_size), horizon)


def _fields(steps: Transition) -> dict[str, Any]:
    return {name: getattr(steps, name) for name in Transition.__dataclass_fields__}
