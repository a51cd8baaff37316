"""Registry of learners. Each module exposes `Config`, `State`, `init`, `act`, `observe`,
`update`.

    init(key, obs_size, action_size, config, num_envs=1) -> State
    act(state, obs [B, O], key, deterministic, noise=None) -> action [B, A] in [-1, 1]
    observe(state, transition: Transition [E]) -> State
        (one collection step of the E environments: running statistics)
    update(state, batch: Transition, key) -> (state, metrics: dict[str, scalar])

`act`, `observe` and `update` are pure and jittable; `deterministic` is static.
Observations reach every function raw: a learner with `normalize_obs` standardises
them itself with the statistics `observe` keeps in its state, and with
`scale_rewards` it divides sampled rewards by the scale those statistics give.

A learner that explores with a draw per environment and episode (TD3's FastTD3 noise)
sets `DRAWS_PER_EPISODE = True`, and its `act` takes `episode_draw` [B] too (uniform in
[0, 1), renewed by the device loop at each episode start; `draws_per_episode`).

A learner that can sample by priority (TD3's and SAC's LAP) defines `prioritized(config)`:
where it is true the loops keep a priority per row of the buffer and write back the
priorities its update returns (`replay.PRIORITY_KEY`; `prioritized` here). One that fades
those priorities by age when sampling (DR.Q's faded replay) defines `fade(config)`, a
`replay.Fade` or None (`fade` here).

A learner whose batches are sub-trajectories (MR.Q's representation) defines
`horizon(config)`: where it is above 1 the loops hand its update `replay.Window`s of that
many consecutive rows from each sampled start (`horizon` here).

A module may also set `CPU_COMPILER_OPTIONS`, XLA options its update compiles with
on a CPU (see `compiler_options`).
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

import jax

from jax_rl.algos import mpo, sac, td3
from jax_rl.core.replay import Fade

ALGORITHMS: dict[str, ModuleType] = {"TD3": td3, "SAC": sac, "MPO": mpo}
# Names the CLIs accept; a name here but not in ALGORITHMS is announced, not built yet.
POLICY_CHOICES = ("TD3", "SAC", "MPO")


class UnknownPolicyError(ValueError):
    pass


def get(name: str) -> ModuleType:
    """The learner module called `name`, or a clear error."""
    if name in ALGORITHMS:
        return ALGORITHMS[name]
    if name in POLICY_CHOICES:
        raise UnknownPolicyError(
            f"policy {name} is not available yet; available: {', '.join(sorted(ALGORITHMS))}"
        )
    raise UnknownPolicyError(f"unknown policy {name!r}; choose from {', '.join(POLICY_CHOICES)}")


def draws_per_episode(algo: ModuleType) -> bool:
    """Whether `algo.act` takes a per-environment, per-episode draw (`episode_draw`)."""
    return bool(getattr(algo, "DRAWS_PER_EPISODE", False))


def prioritized(algo: ModuleType, config: Any) -> bool:
    """Whether `algo`, set up by `config`, samples its batches by priority."""
    wants = getattr(algo, "prioritized", None)
    return bool(wants(config)) if wants is not None else False


def fade(algo: ModuleType, config: Any) -> Fade | None:
    """How `algo`, set up by `config`, fades its priorities by age when sampling (None: it
    does not, and the loops build the plain sampler)."""
    fades = getattr(algo, "fade", None)
    return fades(config) if fades is not None else None


def horizon(algo: ModuleType, config: Any) -> int:
    """Rows per sub-trajectory in `algo`'s batches, set up by `config` (1: transitions)."""
    rows = getattr(algo, "horizon", None)
    return int(rows(config)) if rows is not None else 1


def compiler_options(algo: ModuleType) -> dict[str, str] | None:
    """XLA options for the jitted calls that run `algo`'s update on this backend.

    The learner's `CPU_COMPILER_OPTIONS` when JAX runs on a CPU and this XLA
    accepts them; otherwise None (XLA's defaults): the options are CPU code
    generation choices that change speed, not what is computed.
    """
    options = getattr(algo, "CPU_COMPILER_OPTIONS", None)
    if not options or jax.default_backend() != "cpu":
        return None
    items = tuple(sorted(options.items()))
    return dict(items) if _accepted(items) else None


# A learner's initialisation runs once per run and is timed by no one: on a CPU it compiles
# without XLA's backend optimisations, about 3x faster (TD3's, 16-16 networks: 2.6 s ->
# 0.9 s). Its values then differ from an optimised compilation's by a few ulps (floating-
# point contraction in the initialisers' scaling), not in what is computed.
INIT_CPU_COMPILER_OPTIONS = {"xla_backend_optimization_level": "0"}


def init_compiler_options() -> dict[str, str] | None:
    """XLA options for the jitted calls that initialise learners (`INIT_CPU_COMPILER_OPTIONS`
    on a CPU whose XLA accepts them; otherwise None, XLA's defaults)."""
    if jax.default_backend() != "cpu":
        return None
    items = tuple(sorted(INIT_CPU_COMPILER_OPTIONS.items()))
    return dict(items) if _accepted(items) else None


@functools.cache
def _accepted(items: tuple[tuple[str, str], ...]) -> bool:
    """Whether this XLA compiles a trivial function with these options (an XLA
    that lacks one refuses it at compile time)."""
    try:
        jax.jit(lambda x: x + 1, compiler_options=dict(items)).lower(1.0).compile()
    except Exception:  # noqa: BLE001 - any refusal means: compile without them
        return False
    return True
