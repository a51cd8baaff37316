"""Exploration held until the first reward: one learner part, named by TD3 and SAC.

Where a reward must be found first (the sparse DM Control tasks), a learner that anneals its
exploration from its first update has annealed it before anything was found. SAC's learned
temperature falls while the policy's entropy stays above its target, and with no reward to
argue otherwise it falls to nothing (cartpole-swingup_sparse: alpha 0.85 -> 3e-5 in 50k
steps, the policy's std with it); TD3's exploration schedule runs out on its own clock.
Noise that small meets no reward there: docs/benchmarks/exploration_floor.py measures how
often undirected noise does, by its scale and color.

With `hold_exploration` the learner anneals its exploration only on updates whose batch
holds rewards that differ (a constant reward, 0 or -1 per step, says nothing; but stored
sums of a nonzero constant differ where n-step returns or an action repeat stop at an
episode's end, which then counts as informative): SAC takes its
temperature step only on those (alpha stays at init_alpha until the first), TD3's exploration
std stays at initial_exploration_noise until the first, its noise added to a zero action
rather than to its actor's (whose critic, with nothing learned, is flat: its action is
arbitrary, and noise around a saturated action pins a cart to a wall), and its schedule
(`exploration_decay`) counts those updates only. Once rewards are found the share of such
batches grows as the policy learns to collect them, and the annealing with it: one lucky
reward does not end the exploration that found it. On a task whose rewards differ from the
first steps (every dense task) every batch holds such rewards, and the learner is the one
without the part. The state is two int32 and a flag per agent, so checkpoints, populations
and both loops carry it with no change.

With `exploration_share` > 0 as well, TD3's std follows what the batches carry rather than
a clock: the share of sampled rows whose reward is above their batch's lowest, averaged
over about the last `SHARE_UPDATES` updates. While that share is below `exploration_share`
the std rises toward initial_exploration_noise in proportion to what is missing, and once it
is reached the std is exploration_noise. A dense task reaches its share within the first
hundred or so updates and then explores as the learner without the part; a sparse task
keeps its wide noise for as long as rewards stay rare, and a policy that loses the reward
it found gets the noise back (a schedule, once spent, does not return it).

With `share_horizon` H > 1 too, the TD targets follow the same share: while it is 0 they
are H-step returns, which spread a rare reward over the H rows before it (what makes
cartpole-swingup_sparse learnable: docs/recipe.md, R9b against R9c), and as it rises to
exploration_share they shorten to one step, where dense rewards learn best (finger-spin).
The learner's batches are then windows of H consecutive rows (`replay.Window`, as MR.Q's),
and with n = 1 + (H - 1)(1 - min(share / exploration_share, 1)) between two integers,
the first frac(n) of the batch's rows (which are drawn independently) take ceil(n) steps
and the rest floor(n): on average n steps, and one bootstrap per row. The share is read
from every row of the windows (each a stored step), so it does not depend on the horizon.
SAC takes the share and its horizon too (`exploration_share` with `hold_exploration`);
there the share sets the horizon only, and its temperature is held as above.

Without the hold, SAC's temperature falls from the first update, reward or none (0.85 ->
3e-5 in 50k steps on cartpole-swingup_sparse), until the entropy bonus is lost in the
critics' noise. `alpha_min` floors it: log(alpha) never steps below log(alpha_min), so the
bonus never falls under that scale. It is not the sparse task's answer (a floor of 0.01
there found nothing in 100k frames: docs/exploration.md); it is off by default, static
(0 compiles the published update), and combines with the hold.
"""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jax_rl.algos import common
from jax_rl.core import replay


def hold_field() -> Any:
    """The `hold_exploration` Config field (TD3 and SAC)."""
    return common.field(
        False,
        "anneal exploration (SAC's alpha, TD3's std) only on updates sampling rewards that differ",
        static=True,
    )


def decay_field() -> Any:
    """TD3's `exploration_decay`: the length of its exploration schedule (`scheduled_std`)."""
    return common.field(
        0,
        "updates over which the exploration std falls linearly from initial_exploration_noise "
        "to exploration_noise (0: exploration_noise throughout, as published)",
    )


def initial_noise_field() -> Any:
    """TD3's `initial_exploration_noise`: the schedule's std at its start."""
    return common.field(
        1.0, "exploration std at update 0, the start of the schedule, when exploration_decay > 0"
    )


def noise_min_field() -> Any:
    """TD3's `exploration_noise_min`: the low end of a std drawn per episode (FastTD3's)."""
    return common.field(
        0.0,
        "> 0: each environment draws its exploration std uniformly in [this, "
        "exploration_noise] at every episode start (FastTD3's std_min; device pipeline)",
    )


def temperature_floor_field() -> Any:
    """SAC's `alpha_min`: the floor of its learned temperature (`floor_temperature`)."""
    return common.field(
        0.0,
        "floor of the learned entropy temperature alpha (0: none, as published)",
        static=True,
    )


def floor_temperature(config: Any, log_alpha: jax.Array) -> jax.Array:
    """log(alpha), raised to log(alpha_min) where a step took it below (with no floor,
    alpha_min 0, the value as it is)."""
    if not config.alpha_min > 0:
        return log_alpha
    return jnp.maximum(log_alpha, jnp.log(jnp.float32(config.alpha_min)))


def share_field() -> Any:
    """`exploration_share` (TD3 and SAC): the reward share at which TD3's held std has fallen
    and the share's TD targets (`share_horizon`) are one step."""
    return common.field(
        0.0,
        "with hold_exploration: the share of rows rewarded above their batch's lowest at "
        "which TD3's std is exploration_noise and share_horizon targets one step (0: off)",
        static=True,
    )


# Updates the share of informative rows is averaged over (an exponential average of rate
# 1 / SHARE_UPDATES): long beside the noise of one batch of 256, short beside a run.
SHARE_UPDATES = 1000


def share_horizon_field() -> Any:
    """`share_horizon` (TD3 and SAC): the longest multi-step return the share's TD targets
    take."""
    return common.field(
        1,
        "with exploration_share: TD targets of this many steps at share 0, one step at "
        "exploration_share (1: off)",
        static=True,
    )


def check_temperature_floor(config: Any) -> None:
    """0 <= alpha_min <= init_alpha: a floor above the start would move alpha at once."""
    low, start = config.alpha_min, config.init_alpha
    if not common.is_concrete_number(low) or not low >= 0:
        raise ValueError(f"SAC alpha_min must be a number >= 0, got {low!r}")
    if common.is_concrete_number(start) and low > start:
        raise ValueError(
            f"SAC alpha_min ({low}) is the floor of the temperature: it must not exceed "
            f"init_alpha ({start}), where alpha starts"
        )


class RewardWatch(flax.struct.PyTreeNode):
    """Which updates sampled rewards that differ."""

    found_at: jax.Array  # int32: the first such update; -1 until then (for the metrics)
    informative: jax.Array  # int32: how many updates sampled such rewards
    now: jax.Array  # bool: whether the latest update's batch did


class ShareWatch(RewardWatch):
    """The watch with `exploration_share`: also the average share of informative rows."""

    share: jax.Array  # float32: rows above their batch's lowest reward, averaged


def uses_share(config: Any) -> bool:
    """Whether the watch keeps the reward share (hold_exploration and exploration_share > 0:
    TD3's std follows it, and either learner's share_horizon targets)."""
    return bool(getattr(config, "hold_exploration", False)) and (
        getattr(config, "exploration_share", 0.0) > 0
    )


def share_horizon(config: Any) -> int:
    """Rows per window the share's TD targets read (1: plain transitions)."""
    return int(getattr(config, "share_horizon", 1))


def share_steps(config: Any, watch: ShareWatch, batch_size: int) -> jax.Array:
    """Steps of reward in each row's TD target [B] (int32): n = 1 + (H - 1) times the share
    still missing (1 - min(share / exploration_share, 1)), the first frac(n) of the rows
    taking ceil(n) and the rest floor(n)."""
    missing = 1.0 - jnp.clip(watch.share / config.exploration_share, 0.0, 1.0)
    n = 1.0 + (share_horizon(config) - 1) * missing
    low = jnp.floor(n)
    rows = jnp.arange(batch_size, dtype=jnp.float32) / batch_size
    return (low + (rows < n - low)).astype(jnp.int32)


def share_returns(config: Any, watch: RewardWatch | None, batch: Any) -> tuple[Any, dict]:
    """The batch the critics learn from and its metrics: with share_horizon > 1 the
    windows' multi-step transitions of `share_steps` each (`replay.window_transition`) and
    `explore/horizon`, their mean steps; else `batch` and none."""
    if share_horizon(config) == 1:
        return batch, {}
    assert isinstance(watch, ShareWatch)  # check_schedule: the horizon needs the share
    steps = share_steps(config, watch, batch.reward.shape[0])
    out = replay.window_transition(batch, config.discount, steps)
    return out, {"explore/horizon": steps.astype(jnp.float32).mean()}


def init(config: Any) -> RewardWatch | None:
    """The watch for a learner with hold_exploration, else None (no state)."""
    if not config.hold_exploration:
        return None
    start = {"found_at": jnp.int32(-1), "informative": jnp.int32(0), "now": jnp.bool_(False)}
    if uses_share(config):
        return ShareWatch(**start, share=jnp.float32(0.0))
    return RewardWatch(**start)


def row_share(rewards: jax.Array) -> jax.Array:
    """The share of rows [B] whose reward is above the batch's lowest (0 where all agree)."""
    return jnp.mean((rewards > rewards.min()).astype(jnp.float32))


def observe(watch: RewardWatch | None, rewards: jax.Array, step: jax.Array) -> Any:
    """The watch after update `step` sampled `rewards` [B] (raw, before any scaling)."""
    if watch is None:
        return None
    differ = rewards.max() > rewards.min()
    counted = watch.replace(
        found_at=jnp.where((watch.found_at < 0) & differ, step, watch.found_at),
        informative=watch.informative + differ.astype(jnp.int32),
        now=differ,
    )
    if not isinstance(watch, ShareWatch):
        return counted
    share = watch.share + (row_share(rewards) - watch.share) / SHARE_UPDATES
    return counted.replace(share=share)


def schedule_clock(watch: RewardWatch | None, step: jax.Array) -> jax.Array:
    """The clock of an exploration schedule: the updates that sampled rewards that differ,
    or every update (`step`) without the part."""
    return step if watch is None else watch.informative


def found(watch: RewardWatch | None) -> Any:
    """Whether any update has sampled rewards that differ (always without the part)."""
    return True if watch is None else watch.informative > 0


def unless_held(watch: RewardWatch | None, new: Any, old: Any, now: bool = False) -> Any:
    """`new`, or `old` (a pytree, leaf by leaf) while exploration is held: before the first
    batch with rewards that differ, or with `now`, on any update whose batch held none."""
    if watch is None:
        return new
    go = watch.now if now else found(watch)
    return jax.tree_util.tree_map(lambda n, o: jnp.where(go, n, o), new, old)


def metrics(watch: RewardWatch | None) -> dict[str, jax.Array]:
    """With the part: `explore/reward_found` (1 once found) and `explore/informative` (1 for
    an update whose batch held rewards that differ: averaged over a log row, their share)."""
    if watch is None:
        return {}
    out = {
        "explore/reward_found": (watch.found_at >= 0).astype(jnp.float32),
        "explore/informative": watch.now.astype(jnp.float32),
    }
    if isinstance(watch, ShareWatch):
        out["explore/share"] = watch.share
    return out


def scheduled_std(config: Any, watch: RewardWatch | None, step: jax.Array) -> jax.Array:
    """TD3's exploration std after `step` updates: exploration_noise, or with
    exploration_decay > 0 a straight line from initial_exploration_noise at update 0 to
    exploration_noise at update exploration_decay, flat after. With hold_exploration the
    schedule counts only updates that sampled rewards that differ (so the std is
    initial_exploration_noise until the first). With exploration_share > 0 there is no
    schedule: the std is initial_exploration_noise less (initial_exploration_noise -
    exploration_noise) times the averaged row share over exploration_share, capped at 1."""
    if isinstance(watch, ShareWatch):
        reached = jnp.clip(watch.share / config.exploration_share, 0.0, 1.0)
        high, low = config.initial_exploration_noise, config.exploration_noise
        return high + reached * (low - high)
    decay = jnp.asarray(config.exploration_decay, jnp.float32)
    clock = schedule_clock(watch, step)
    done = jnp.clip(clock / jnp.maximum(decay, 1.0), 0.0, 1.0)
    scheduled = config.initial_exploration_noise + done * (
        config.exploration_noise - config.initial_exploration_noise
    )
    return jnp.where(decay > 0, scheduled, config.exploration_noise)


def check_share(config: Any) -> None:
    """exploration_share in [0, 1], above 0 only with the hold (whose watch keeps it); and
    share_horizon (`check_share_horizon`). SAC's check; TD3's is `check_schedule`."""
    name = _learner(config)
    share = getattr(config, "exploration_share", 0.0)
    check_share_horizon(config, share)
    if not common.is_concrete_number(share):
        return
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"{name} exploration_share must be in [0, 1], got {share!r}")
    if share > 0 and not config.hold_exploration:
        raise ValueError(
            f"{name} exploration_share is kept by the held exploration's watch: give "
            "hold_exploration too (--hold_exploration)"
        )


def check_schedule(config: Any) -> None:
    """TD3's hold needs a schedule or a share: without one the first reward would end the
    exploration. The share is the hold's, in (0, 1], and replaces the schedule."""
    check_share(config)
    share = getattr(config, "exploration_share", 0.0)
    if common.is_concrete_number(share):
        decay = config.exploration_decay
        if share > 0 and common.is_concrete_number(decay) and decay != 0:
            raise ValueError(
                "TD3 exploration_share replaces the exploration_decay schedule: give one of "
                f"them (exploration_share {share}, exploration_decay {decay})"
            )
        if share > 0:
            return
    if config.hold_exploration and common.is_concrete_number(config.exploration_decay):
        if config.exploration_decay <= 0:
            raise ValueError(
                "TD3 hold_exploration anneals its exploration std over exploration_decay "
                "updates that sampled rewards that differ: give exploration_decay > 0 "
                "(without a schedule the first reward would end the exploration at once)"
            )


def _learner(config: Any) -> str:
    return type(config).__module__.rsplit(".", 1)[-1].upper()


def check_share_horizon(config: Any, share: Any) -> None:
    """share_horizon: a positive integer; above 1 only with the share (which sets its
    length) and not with MR.Q's representation (which forms its own multi-step returns)."""
    name = _learner(config)
    steps = getattr(config, "share_horizon", 1)
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"{name} share_horizon must be a positive integer, got {steps!r}")
    if steps == 1:
        return
    if not (config.hold_exploration and common.is_concrete_number(share) and share > 0):
        raise ValueError(
            f"{name} share_horizon shortens the TD targets as the reward share rises: give "
            "--hold_exploration and --exploration_share too (fixed multi-step returns: --n_step)"
        )
    if config.representation == "mrq":
        raise ValueError(
            f"{name} share_horizon: representation mrq forms its own multi-step returns "
            "(value_horizon); give one of them"
        )
