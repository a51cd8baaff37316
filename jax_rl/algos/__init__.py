"""Registry of learners. Each module exposes `Config`, `State`, `init`, `act`, `update`.

    init(key, obs_size, action_size, config) -> State
    act(state, obs [B, O], key, deterministic) -> action [B, A] in [-1, 1]
    update(state, batch: Transition, key) -> (state, metrics: dict[str, scalar])

`act` and `update` are pure and jittable; `deterministic` is static.
"""

from __future__ import annotations

from types import ModuleType

from jax_rl.algos import mpo, sac, td3

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
