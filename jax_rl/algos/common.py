"""Small pieces that more than one learner needs: config checks and Adam.

Learning rates are traced values held in the learner's state (so that a
population of learners with different rates can be vmapped), hence Adam is
split into optax's `scale_by_adam` and a multiplication by that traced rate.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import flax.struct
import jax
import jax.numpy as jnp
import optax
from jax.typing import ArrayLike

if TYPE_CHECKING:
    from jax_rl.core.replay import Fade

_ADAM = optax.scale_by_adam()
ADAM_BETA1 = 0.9

ConfigT = TypeVar("ConfigT")


def field(default: Any, doc: str, static: bool = False, flag: bool = True) -> Any:
    """A config field with its one-line doc (shown by the CLIs' --help).

    Static fields (shapes, counts) are part of the compiled program; the others
    are traced values, so changing them never recompiles. A field with
    flag=False is set by the environment, not by the user (no command-line flag).
    """
    metadata = {"doc": doc, "flag": flag}
    return flax.struct.field(pytree_node=not static, default=default, metadata=metadata)


def describe(config_class: type) -> list[tuple[str, Any, str, bool]]:
    """(name, default, doc, static) for each field of a config class that is a flag."""
    return [
        (f.name, f.default, f.metadata.get("doc", ""), not f.metadata.get("pytree_node", True))
        for f in dataclasses.fields(config_class)
        if f.metadata.get("flag", True)
    ]


def is_concrete_number(value: Any) -> bool:
    # A config is rebuilt with tracers (and other placeholders) whenever JAX
    # unflattens it; only values a user wrote down are checked.
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_fields(
    config: Any,
    positive: Iterable[str] = (),
    non_negative: Iterable[str] = (),
    unit_interval: Iterable[str] = (),
    positive_ints: Iterable[str] = (),
) -> None:
    """Raise ValueError naming the first field whose value is out of range."""
    name = type(config).__module__.rsplit(".", 1)[-1].upper()
    for field in positive:
        value = getattr(config, field)
        if is_concrete_number(value) and not value > 0:
            raise ValueError(f"{name} {field} must be > 0, got {value}")
    for field in non_negative:
        value = getattr(config, field)
        if is_concrete_number(value) and not value >= 0:
            raise ValueError(f"{name} {field} must be >= 0, got {value}")
    for field in unit_interval:
        value = getattr(config, field)
        if is_concrete_number(value) and not 0 <= value <= 1:
            raise ValueError(f"{name} {field} must be in [0, 1], got {value}")
    for field in positive_ints:
        value = getattr(config, field)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} {field} must be a positive integer, got {value!r}")


def check_hidden_sizes(config: Any) -> None:
    sizes = config.hidden_sizes
    if not sizes or not all(isinstance(s, int) and s > 0 for s in sizes):
        raise ValueError(f"hidden_sizes must be positive integers, got {sizes!r}")


def check_init(config: Any) -> None:
    from jax_rl.networks import INITS

    if config.layer_init not in INITS:
        raise ValueError(f"layer_init must be one of {', '.join(INITS)}, got {config.layer_init!r}")


def as_traced(config: ConfigT) -> ConfigT:
    """The config with every traced (pytree) field as a float32 array.

    Done once in `init`, so that the state's leaves keep one dtype and weak
    type across updates and the update compiles once.
    """
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float32), config)


def copy(tree: Any) -> Any:
    """A copy of every array in `tree`.

    Target parameters start equal to the online ones but must not share
    their buffers: the loops donate the whole state, and XLA refuses to
    donate one buffer twice.
    """
    return jax.tree_util.tree_map(jnp.copy, tree)


def adam_init(params: Any) -> optax.OptState:
    return _ADAM.init(params)


def adam_step(
    params: Any,
    grads: Any,
    opt_state: optax.OptState,
    learning_rate: ArrayLike,
    weight_decay: ArrayLike = 0.0,
    beta1: float = ADAM_BETA1,
    project: bool = False,
) -> tuple[Any, optax.OptState]:
    """One Adam step (betas beta1 and 0.999, 0.9 by default; eps 1e-8) with a traced
    learning rate; beta1 is a Python float (a static config field). With weight_decay > 0
    AdamW's decoupled decay (Loshchilov and Hutter, 2019): p <- p - lr * (adam_update +
    weight_decay * p), on every parameter. With `project` (a learner with a simbav2
    network, `on_sphere`) SimbaV2's weights are then put back on the unit sphere
    (`networks.project`)."""
    from jax_rl import networks

    adam = _ADAM if beta1 == ADAM_BETA1 else optax.scale_by_adam(b1=beta1)
    updates, opt_state = adam.update(grads, opt_state, params)
    params = jax.tree_util.tree_map(
        lambda p, u: p - learning_rate * (u + weight_decay * p), params, updates
    )
    return (networks.project(params) if project else params), opt_state


def on_sphere(config: Any) -> bool:
    """Whether a learner's networks include SimbaV2's (whose weights live on the sphere)."""
    families = (getattr(config, "actor_network", "mlp"), getattr(config, "critic_network", "mlp"))
    return "simbav2" in families


def network_step(
    params: Any, grads: Any, opt_state: optax.OptState, learning_rate: ArrayLike, config: Any
) -> tuple[Any, optax.OptState]:
    """One step of a TD3 or SAC network: `adam_step` with the config's weight_decay and
    adam_beta1, and SimbaV2's projection where the learner has a simbav2 network."""
    return adam_step(
        params, grads, opt_state, learning_rate, config.weight_decay, config.adam_beta1,
        project=on_sphere(config),
    )  # fmt: skip


# --- The accelerator-scale recipe: fields TD3 and SAC share --------------------------


def check_recipe(config: Any) -> None:
    """Raise ValueError for a bad atom count, value range, width or dtype."""
    from jax_rl.networks import MATMUL_DTYPES

    if not isinstance(config.num_atoms, int) or config.num_atoms < 2:
        raise ValueError(f"num_atoms must be an integer >= 2, got {config.num_atoms!r}")
    low, high = config.v_min, config.v_max
    if is_concrete_number(low) and is_concrete_number(high):
        if not (math.isfinite(low) and math.isfinite(high)):
            raise ValueError(f"v_min and v_max must be finite, got {low} and {high}")
        if not low < high:
            raise ValueError(f"v_min must be below v_max, got v_min {low} >= v_max {high}")
    for name in ("actor_hidden_sizes", "critic_hidden_sizes"):
        sizes = getattr(config, name)
        if not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes):
            raise ValueError(f"{name} must be positive integers, got {sizes!r}")
    if config.matmul_dtype not in MATMUL_DTYPES:
        choices = ", ".join(MATMUL_DTYPES)
        raise ValueError(f"matmul_dtype must be one of {choices}, got {config.matmul_dtype!r}")


def actor_sizes(config: Any) -> tuple[int, ...]:
    """The actor's hidden sizes: actor_hidden_sizes, or hidden_sizes where empty."""
    return tuple(config.actor_hidden_sizes) or tuple(config.hidden_sizes)


def critic_sizes(config: Any) -> tuple[int, ...]:
    """Each critic's hidden sizes: critic_hidden_sizes, or hidden_sizes where empty."""
    return tuple(config.critic_hidden_sizes) or tuple(config.hidden_sizes)


def views(config: Any, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(what the actor sees, what the critics see) of obs [..., O].

    With actor_obs_size S > 0 the observation is [state (S) | privileged state]
    (asymmetric actor-critic, `jax_rl.envs.observation`): the actor sees the first
    S features, the critics the rest. Otherwise both see it all.
    """
    size = config.actor_obs_size
    if size == 0:
        return obs, obs
    return obs[..., :size], obs[..., size:]


def init_obs_stats(config: Any, obs_size: int) -> Any:
    """The state's observation statistics: fresh ones with normalize_obs, else None."""
    from jax_rl.core import normalization

    return normalization.init_stats(obs_size) if config.normalize_obs else None


def init_reward_stats(config: Any, num_envs: int) -> Any:
    """The state's reward-scale statistics for num_envs environments: fresh ones with
    scale_rewards, else None."""
    from jax_rl.core import normalization

    return normalization.init_reward_stats(num_envs) if config.scale_rewards else None


def observe(state: Any, transition: Any) -> Any:
    """The learner's state with one collection step of its E environments (a Transition,
    obs [E, O], reward and discount [E]) merged into its statistics (`jax_rl.core.normalization`):
    the observations with normalize_obs, the discounted returns with scale_rewards."""
    from jax_rl.core import normalization

    if state.obs_stats is not None:
        state = state.replace(obs_stats=normalization.merge(state.obs_stats, transition.obs))
    if state.reward_stats is not None:
        merged = normalization.merge_rewards(
            state.reward_stats, transition.reward, transition.discount, state.config.discount
        )
        state = state.replace(reward_stats=merged)
    return state


def normalize_batch(state: Any, batch: Any) -> Any:
    """The batch with obs and next_obs standardised, and rewards divided by the reward
    scale, by the state's statistics (each where it keeps them)."""
    from jax_rl.core import normalization

    if state.reward_stats is not None:
        batch = batch.replace(reward=batch.reward / normalization.reward_scale(state.reward_stats))
    if state.obs_stats is None:
        return batch
    return batch.replace(
        obs=normalization.normalize(state.obs_stats, batch.obs),
        next_obs=normalization.normalize(state.obs_stats, batch.next_obs),
    )


# --- Prioritised replay (LAP, Fujimoto et al., 2020): fields TD3 and SAC share -------

REPLAYS = ("uniform", "lap")
LAP_MIN_PRIORITY = 1.0


def replay_field() -> Any:
    return field(
        "uniform",
        "uniform, or lap (TD7's prioritised replay, Huber loss)",
        static=True,
    )


def lap_alpha_field() -> Any:
    return field(0.4, "LAP's priority exponent alpha, in (0, 1]")


# DR.Q's faded prioritised replay (Lyu et al., 2026). Static: the loops read them when they
# build the sampler, and a traced field would add a leaf to every learner's state.
def replay_fade_field() -> Any:
    return field(
        1.0,
        "DR.Q's faded LAP: draw by priority x max(replay_fade^age, floor), age in rows "
        "written since; in (0, 1], 1 is off",
        static=True,
    )


def replay_fade_floor_field() -> Any:
    return field(0.1, "replay_fade's floor, in (0, 1]", static=True)


# CrossQ's fields (Bhatt et al., ICLR 2024), the same in TD3 and SAC.
def crossq_field(targets: str) -> Any:
    return field(
        False,
        f"CrossQ: BatchRenorm networks, no target {targets}, (s, a) and (s', a') in one "
        "critic pass",
        static=True,
    )


def renorm_momentum_field() -> Any:
    return field(0.99, "momentum of BatchRenorm's running statistics (crossq)", static=True)


def renorm_warmup_field() -> Any:
    return field(
        100_000,
        "training passes of each BatchRenorm layer before its r and d corrections start "
        "(batch normalisation until then; crossq)",
        static=True,
    )


def adam_beta1_field() -> Any:
    return field(
        0.9, "Adam's first-moment decay beta1 of actor and critics (CrossQ: 0.5)", static=True
    )


def prioritized(config: Any) -> bool:
    """Whether `config` samples by priority (LAP): a learner with these fields names this as
    its `prioritized` (read by the loops through `jax_rl.algos.prioritized`)."""
    return config.replay == "lap"


def fade(config: Any) -> Fade | None:
    """DR.Q's fade of the prioritised sampling (`replay.Fade`), or None where it is off
    (replay_fade 1): a learner with these fields names this as its `fade` (read by the
    loops through `jax_rl.algos.fade`)."""
    from jax_rl.core.replay import Fade

    if config.replay_fade == 1:
        return None
    return Fade(float(config.replay_fade), float(config.replay_fade_floor))


def check_replay(config: Any) -> None:
    """Raise ValueError for an unknown replay, lap_alpha outside (0, 1], replay_fade or
    its floor outside (0, 1], or a fade without LAP's priorities to fade (a critic recipe
    without TD errors refuses LAP itself, `critics.check`)."""
    name = type(config).__module__.rsplit(".", 1)[-1].upper()
    if config.replay not in REPLAYS:
        raise ValueError(
            f"{name} replay must be one of {', '.join(REPLAYS)}, got {config.replay!r}"
        )
    alpha = config.lap_alpha
    if is_concrete_number(alpha) and not 0 < alpha <= 1:
        raise ValueError(f"{name} lap_alpha must be in (0, 1], got {alpha}")
    for key in ("replay_fade", "replay_fade_floor"):
        value = getattr(config, key)
        if not is_concrete_number(value) or not 0 < value <= 1:
            raise ValueError(f"{name} {key} must be in (0, 1], got {value!r}")
    if config.replay_fade < 1 and config.replay != "lap":
        raise ValueError(
            f"{name} replay_fade fades LAP's priorities: it needs replay lap, got replay "
            f"{config.replay}"
        )


def td_loss(
    q: jax.Array, target: jax.Array, config: Any, scale: float
) -> tuple[jax.Array, jax.Array | None]:
    """The critics' loss on q [E, B] against target [B] (a constant) and, with LAP, the
    new priorities [B] of the rows.

    Uniform replay: scale * sum_E mean_B delta^2. LAP: sum_E mean_B Huber(delta) (0.5 d^2
    below |d| = 1, |d| - 0.5 above: the loss whose expectation under priority sampling has
    the gradient of the mean squared error; the paper's Lemma), and priorities
    max(max_E |delta|, 1)^lap_alpha.
    """
    delta = q - target[None]
    if config.replay != "lap":
        return scale * (delta**2).mean(axis=1).sum(), None
    size = jnp.abs(delta)
    huber = jnp.where(size < LAP_MIN_PRIORITY, 0.5 * delta**2, LAP_MIN_PRIORITY * (size - 0.5))
    priority = jnp.maximum(size.max(axis=0), LAP_MIN_PRIORITY) ** config.lap_alpha
    return huber.mean(axis=1).sum(), jax.lax.stop_gradient(priority)


def with_priority(metrics: dict, priority: jax.Array | None) -> dict:
    """The update's metrics, with the new priorities of its rows where it has them."""
    from jax_rl.core.replay import PRIORITY_KEY

    return metrics if priority is None else {**metrics, PRIORITY_KEY: priority}


# --- Network families (`jax_rl.networks.body`): fields every learner shares ----------


def network_field(role: str) -> Any:
    """The `<role>_network` field: which family the actor's or the critics' network is."""
    return field(
        "mlp",
        f"family of the {role}'s network: mlp (published), simba (SimBa residual blocks), "
        f"simbav2 (SimbaV2 hyperspherical blocks) or batchrenorm (CrossQ's; with critic "
        f"crossq, which reads mlp as it); simba's width is the {role}'s hidden size",
        static=True,
    )


def blocks_field(role: str, default: int) -> Any:
    """The `<role>_blocks` field: residual blocks of a simba or simbav2 network."""
    return field(default, f"residual blocks of the {role}'s simba or simbav2 network", static=True)


def scale_rewards_field() -> Any:
    """The `scale_rewards` field (SimbaV2's reward scaling, `jax_rl.core.normalization`)."""
    return field(
        False,
        "divide rewards by the running spread of the discounted return (SimbaV2's)",
        static=True,
    )


def check_networks(
    config: Any, actor_sizes: tuple[int, ...], critic_sizes: tuple[int, ...]
) -> None:
    """Raise ValueError for an unknown family, a block count below 1, a simba network given
    several different widths (the critic recipe checks its own, `critics.check`)."""
    from jax_rl.networks import NETWORKS

    name = type(config).__module__.rsplit(".", 1)[-1].upper()
    beta1 = getattr(config, "adam_beta1", ADAM_BETA1)
    if is_concrete_number(beta1) and not 0 <= beta1 < 1:
        raise ValueError(f"{name} adam_beta1 must be in [0, 1), got {beta1}")
    for role, sizes in (("actor", actor_sizes), ("critic", critic_sizes)):
        network, blocks = getattr(config, f"{role}_network"), getattr(config, f"{role}_blocks")
        if network not in NETWORKS:
            choices = ", ".join(NETWORKS)
            raise ValueError(f"{name} {role}_network must be one of {choices}, got {network!r}")
        if not isinstance(blocks, int) or isinstance(blocks, bool) or blocks < 1:
            raise ValueError(f"{name} {role}_blocks must be an integer >= 1, got {blocks!r}")
        if network == "batchrenorm" and not is_crossq(config):
            raise ValueError(
                f"{name} {role}_network batchrenorm trains with the crossq critic recipe "
                "(--critic crossq), whose one pass keeps its running statistics"
            )
        if network in ("simba", "simbav2") and len(set(sizes)) != 1:
            raise ValueError(
                f"{name} {role}_network {network} takes one width (all hidden sizes equal), "
                f"got {','.join(map(str, sizes))}"
            )


def is_crossq(config: Any) -> bool:
    """Whether `config` trains its critics with the crossq recipe (`critic` or the alias)."""
    return bool(getattr(config, "crossq", False) or getattr(config, "critic", "") == "crossq")


def network_family(config: Any, role: str) -> str:
    """The family `networks.body` builds the actor's or the critics' network from: the
    `<role>_network` field, where the crossq recipe reads the default mlp as batchrenorm
    (CrossQ's networks)."""
    network: str = getattr(config, f"{role}_network", "mlp")
    return "batchrenorm" if network == "mlp" and is_crossq(config) else network


def renorm(config: Any, train: bool) -> Any:
    """The `networks.Renorm` of a learner's batchrenorm networks (their momentum, warm-up
    and mode; None where neither network is of that family)."""
    from jax_rl.networks import Renorm

    if "batchrenorm" not in (network_family(config, "actor"), network_family(config, "critic")):
        return None
    return Renorm(float(config.renorm_momentum), int(config.renorm_warmup), train)


def split_variables(variables: dict) -> tuple[dict, dict | None]:
    """A network's variables as (parameters, running statistics or None): the optimiser
    steps the first, only a training-mode pass writes the second."""
    stats = {k: v for k, v in variables.items() if k != "params"}
    return {"params": variables["params"]}, (stats or None)


def variables(params: dict, stats: dict | None) -> dict:
    """Parameters and running statistics, as a network's `apply` takes them."""
    return params if stats is None else {**params, **stats}


def apply_train(module: Any, params: dict, stats: dict | None, *args: Any) -> tuple[Any, Any]:
    """A training-mode pass: (output, the running statistics it updated); stats None
    (a network without them): the output and None."""
    if stats is None:
        return module.apply(params, *args), None
    out, updated = module.apply({**params, **stats}, *args, mutable=list(stats))
    return out, updated


# --- Fields TD3 and SAC declare alike (`shared`) ------------------------------------

# name -> the arguments of its `field`.
SHARED_FIELDS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "hidden_sizes": (
        ((256, 256), "hidden layer sizes of the actor and of each critic"),
        {"static": True},
    ),
    "actor_lr": ((3e-4, "Adam learning rate of the actor"), {}),
    "critic_lr": ((3e-4, "Adam learning rate of the critics"), {}),
    "discount": ((0.99, "gamma, the per-step discount of future rewards"), {}),
    "actor_hidden_sizes": (
        ((), "hidden layer sizes of the actor (empty: hidden_sizes)"),
        {"static": True},
    ),
    "critic_hidden_sizes": (
        ((), "hidden layer sizes of each critic (empty: hidden_sizes)"),
        {"static": True},
    ),
    "num_atoms": ((101, "atoms of the categorical critic"), {"static": True}),
    "v_min": ((-100.0, "lowest atom of the categorical critic"), {}),
    "v_max": ((100.0, "highest atom of the categorical critic"), {}),
    "weight_decay": ((0.0, "AdamW's decoupled weight decay (0: Adam)"), {}),
    "normalize_obs": (
        (False, "standardise observations with running statistics"),
        {"static": True},
    ),
    "matmul_dtype": (
        ("float32", "dtype of the matrix products: float32 or bf16"),
        {"static": True},
    ),
    "actor_obs_size": (
        (0, "features of the observation the actor sees (0: all)"),
        {"static": True, "flag": False},
    ),
}


def shared(name: str) -> Any:
    """The field `name` as TD3 and SAC both declare it (`SHARED_FIELDS`)."""
    args, kwargs = SHARED_FIELDS[name]
    return field(*args, **kwargs)
