"""SAC: Soft Actor-Critic with automatic entropy tuning (Haarnoja et al., 2018, v2).

Equations (B batch, A action size, alpha = exp(log_alpha)):
    a' ~ pi(.|s'),  y = r + gamma * d * (min_i Q_targ_i(s', a') - alpha * log pi(a'|s'))
    L_critic = sum_i 0.5 * mean_B (Q_i(s, a) - y)^2
    L_actor  = mean_B (alpha * log pi(a~|s) - min_i Q_i(s, a~)),  a~ ~ pi(.|s) reparameterised
    L_alpha  = -mean_B log_alpha * (log pi(a~|s) + target_entropy)
    critic targets <- Polyak(tau) every update

Our choices: pi is a tanh-squashed diagonal Gaussian whose log-probability
is summed over action dimensions with the tanh correction
(`jax_rl.networks.tanh_gaussian_sample`); 256-256 ReLU networks; Adam 3e-4 for
actor, critics and temperature; twin critics as one vmapped ensemble; the
actor's loss uses the critics after this update's critic step; the target
entropy defaults to -A (the heuristic of the SAC v2 paper); alpha starts at 1.
There is no target actor, as in v2.

The accelerator-scale recipe (as TD3's, off by default): a categorical critic
(`critic = "categorical"`, `jax_rl.algos.categorical`), whose target atoms are
shifted by the entropy term, z' = r + gamma * d * (z - alpha * log pi(a'|s')), and
whose Q in the actor's loss is the mean of the distribution of lower mean;
observation normalisation; separate widths; AdamW's weight decay on the
networks (not on log alpha); bf16 matrix products; an asymmetric actor and critics.
"""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jax_rl import normalization
from jax_rl.algos import categorical, common
from jax_rl.networks import (
    EnsembleCritic,
    GaussianPolicy,
    polyak_update,
    squash,
    tanh_gaussian_sample,
)
from jax_rl.transition import Transition


class Config(flax.struct.PyTreeNode):
    """SAC hyperparameters. Shapes are static; the rest are traced."""

    hidden_sizes: tuple[int, ...] = common.field(
        (256, 256), "hidden layer sizes of the actor and of each critic", static=True
    )
    layer_init: str = common.field(
        "lecun", "layer initialisation: pytorch (uniform +-1/sqrt(fan_in)) or lecun", static=True
    )
    actor_lr: float = common.field(3e-4, "Adam learning rate of the actor")
    critic_lr: float = common.field(3e-4, "Adam learning rate of the critics")
    alpha_lr: float = common.field(
        3e-4,
        "Adam learning rate of log(alpha), the entropy temperature; 0 keeps alpha at "
        "init_alpha (SAC with a fixed temperature, Haarnoja et al., 2018a)",
    )
    discount: float = common.field(0.99, "gamma, the per-step discount of future rewards")
    tau: float = common.field(0.005, "Polyak rate of the target critics")
    init_alpha: float = common.field(1.0, "initial entropy temperature alpha")
    target_entropy_per_dim: float = common.field(
        -1.0, "target entropy per action dimension; the target is this times A (-A by default)"
    )
    # The accelerator-scale recipe (the same fields as TD3's).
    actor_hidden_sizes: tuple[int, ...] = common.field(
        (), "hidden layer sizes of the actor (empty: hidden_sizes)", static=True
    )
    critic_hidden_sizes: tuple[int, ...] = common.field(
        (), "hidden layer sizes of each critic (empty: hidden_sizes)", static=True
    )
    critic: str = common.field(
        "scalar", "critic: scalar (published) or categorical (C51 distribution)", static=True
    )
    num_atoms: int = common.field(101, "atoms of the categorical critic", static=True)
    v_min: float = common.field(-100.0, "lowest atom of the categorical critic")
    v_max: float = common.field(100.0, "highest atom of the categorical critic")
    weight_decay: float = common.field(0.0, "AdamW's decoupled weight decay (0: Adam)")
    normalize_obs: bool = common.field(
        False, "standardise observations with running statistics", static=True
    )
    matmul_dtype: str = common.field(
        "float32", "dtype of the matrix products: float32 or bf16", static=True
    )
    actor_obs_size: int = common.field(
        0, "features of the observation the actor sees (0: all)", static=True, flag=False
    )

    def __post_init__(self) -> None:
        common.check_hidden_sizes(self)
        common.check_init(self)
        common.check_recipe(self)
        common.check_fields(
            self,
            positive=("actor_lr", "critic_lr", "init_alpha"),
            non_negative=("alpha_lr", "weight_decay"),
            unit_interval=("discount", "tau"),
        )


class State(flax.struct.PyTreeNode):
    actor_params: Any
    critic_params: Any
    target_critic_params: Any
    log_alpha: jax.Array
    actor_opt_state: optax.OptState
    critic_opt_state: optax.OptState
    alpha_opt_state: optax.OptState
    step: jax.Array  # updates done so far
    obs_stats: Any  # normalization.ObsStats with normalize_obs, else None
    config: Config
    action_size: int = flax.struct.field(pytree_node=False)


def _networks(config: Config, action_size: int) -> tuple[GaussianPolicy, EnsembleCritic]:
    policy = GaussianPolicy(
        common.actor_sizes(config),
        action_size,
        layer_init=config.layer_init,
        matmul_dtype=config.matmul_dtype,
    )
    critic = EnsembleCritic(
        common.critic_sizes(config),
        layer_init=config.layer_init,
        num_atoms=common.num_atoms(config),
        matmul_dtype=config.matmul_dtype,
    )
    return policy, critic


def _atoms(config: Config) -> jax.Array:
    return categorical.support(config.v_min, config.v_max, config.num_atoms)


def td_target(state: State, batch: Transition, key: jax.Array) -> jax.Array:
    """The soft TD target with clipped double Q and the entropy bonus: y [B], or for a
    categorical critic the projected target distribution [B, K]. batch is normalised."""
    cfg = state.config
    actor, critic = _networks(cfg, state.action_size)
    actor_obs, critic_obs = common.views(cfg, batch.next_obs)
    mean, log_std = actor.apply(state.actor_params, actor_obs)
    next_action, next_log_prob = tanh_gaussian_sample(mean, log_std, key)
    next_out = critic.apply(state.target_critic_params, critic_obs, next_action)
    entropy_term = jnp.exp(state.log_alpha) * next_log_prob
    discount = cfg.discount * batch.discount
    if cfg.critic == "categorical":
        return categorical.target_distribution(
            next_out, _atoms(cfg), batch.reward, discount, shift=entropy_term
        )
    return batch.reward + discount * (next_out.min(axis=0) - entropy_term)


def critic_loss(
    critic_params: Any, state: State, batch: Transition, target: jax.Array
) -> jax.Array:
    """sum over critics of 0.5 mean_B (Q_i(s, a) - y)^2, target y [B]; for a categorical
    critic their cross-entropies to the target distribution [B, K]. target is a constant."""
    _, critic = _networks(state.config, state.action_size)
    _, critic_obs = common.views(state.config, batch.obs)
    out = critic.apply(critic_params, critic_obs, batch.action)  # [E, B] or [E, B, K]
    if state.config.critic == "categorical":
        return categorical.cross_entropy(out, target)
    return 0.5 * ((out - target[None]) ** 2).mean(axis=1).sum()


def actor_loss(
    actor_params: Any, state: State, obs: jax.Array, key: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """mean_B (alpha log pi(a~|s) - min_i Q_i(s, a~)) (a categorical critic's Q: the mean
    of the distribution of lower mean); also returns log pi [B]. obs is normalised."""
    cfg = state.config
    actor, critic = _networks(cfg, state.action_size)
    actor_obs, critic_obs = common.views(cfg, obs)
    mean, log_std = actor.apply(actor_params, actor_obs)
    action, log_prob = tanh_gaussian_sample(mean, log_std, key)
    out = critic.apply(state.critic_params, critic_obs, action)
    if cfg.critic == "categorical":
        out = categorical.mean_value(out, _atoms(cfg))
    q = out.min(axis=0)
    return (jnp.exp(state.log_alpha) * log_prob - q).mean(), log_prob


def alpha_loss(log_alpha: jax.Array, log_prob: jax.Array, target_entropy: jax.Array) -> jax.Array:
    """-mean_B log_alpha (log pi + target_entropy); log_prob [B] is a constant."""
    return -(log_alpha * (log_prob + target_entropy)).mean()


def init(key: jax.Array, obs_size: int, action_size: int, config: Config) -> State:
    actor, critic = _networks(config, action_size)
    actor_key, critic_key = jax.random.split(key)
    obs = jnp.zeros((1, obs_size), jnp.float32)
    action = jnp.zeros((1, action_size), jnp.float32)
    actor_obs, critic_obs = common.views(config, obs)
    actor_params = actor.init(actor_key, actor_obs)
    critic_params = critic.init(critic_key, critic_obs, action)
    log_alpha = jnp.log(jnp.float32(config.init_alpha))
    return State(
        actor_params=actor_params,
        critic_params=critic_params,
        target_critic_params=common.copy(critic_params),
        log_alpha=log_alpha,
        actor_opt_state=common.adam_init(actor_params),
        critic_opt_state=common.adam_init(critic_params),
        alpha_opt_state=common.adam_init(log_alpha),
        step=jnp.int32(0),
        obs_stats=common.init_obs_stats(config, obs_size),
        config=common.as_traced(config),
        action_size=action_size,
    )


def act(
    state: State,
    obs: jax.Array,
    key: jax.Array,
    deterministic: bool,
    noise: jax.Array | None = None,
    episode_draw: jax.Array | None = None,
) -> jax.Array:
    """obs [B, O] (raw) -> action [B, A]: tanh(mean) if deterministic, else a sample
    (its standard-normal draw from `key`, or `noise` [B, A] where given).
    `episode_draw` (a per-environment draw some learners explore with) is unused."""
    actor, _ = _networks(state.config, state.action_size)
    actor_obs, _ = common.views(state.config, normalization.normalize(state.obs_stats, obs))
    mean, log_std = actor.apply(state.actor_params, actor_obs)
    if deterministic:
        return squash(mean)
    action, _ = tanh_gaussian_sample(mean, log_std, key, noise)
    return action


observe = common.observe


def _update_critic(state: State, batch: Transition, key: jax.Array) -> tuple[State, jax.Array]:
    target = td_target(state, batch, key)
    loss, grads = jax.value_and_grad(critic_loss)(state.critic_params, state, batch, target)
    params, opt_state = common.adam_step(
        state.critic_params,
        grads,
        state.critic_opt_state,
        state.config.critic_lr,
        state.config.weight_decay,
    )
    return state.replace(critic_params=params, critic_opt_state=opt_state), loss


def _update_actor(
    state: State, obs: jax.Array, key: jax.Array
) -> tuple[State, jax.Array, jax.Array]:
    (loss, log_prob), grads = jax.value_and_grad(actor_loss, has_aux=True)(
        state.actor_params, state, obs, key
    )
    params, opt_state = common.adam_step(
        state.actor_params,
        grads,
        state.actor_opt_state,
        state.config.actor_lr,
        state.config.weight_decay,
    )
    return state.replace(actor_params=params, actor_opt_state=opt_state), loss, log_prob


def _update_alpha(state: State, log_prob: jax.Array) -> tuple[State, jax.Array]:
    target_entropy = state.config.target_entropy_per_dim * state.action_size
    loss, grad = jax.value_and_grad(alpha_loss)(
        state.log_alpha, jax.lax.stop_gradient(log_prob), target_entropy
    )
    log_alpha, opt_state = common.adam_step(
        state.log_alpha, grad, state.alpha_opt_state, state.config.alpha_lr
    )
    return state.replace(log_alpha=log_alpha, alpha_opt_state=opt_state), loss


def update(state: State, batch: Transition, key: jax.Array) -> tuple[State, dict[str, jax.Array]]:
    """Critics, then actor, then temperature, then Polyak-averaged target critics.
    batch holds raw observations (normalised here with the state's statistics)."""
    batch = common.normalize_batch(state, batch)
    critic_key, actor_key = jax.random.split(key)
    state, loss_critic = _update_critic(state, batch, critic_key)
    state, loss_actor, log_prob = _update_actor(state, batch.obs, actor_key)
    state, loss_alpha = _update_alpha(state, log_prob)
    state = state.replace(
        target_critic_params=polyak_update(
            state.target_critic_params, state.critic_params, state.config.tau
        ),
        step=state.step + 1,
    )
    metrics = {
        "loss/critic": loss_critic,
        "loss/actor": loss_actor,
        "loss/alpha": loss_alpha,
        "dual/alpha": jnp.exp(state.log_alpha),
        "policy/entropy": -log_prob.mean(),
    }
    return state, metrics
