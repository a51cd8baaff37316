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

The critic is a recipe (`jax_rl.algos.critics`, `critic`): scalar (the equations above),
categorical (C51: the target atoms shifted by the entropy term, z' = r + gamma * d * (z -
alpha * log pi(a'|s'))), crossq (CrossQ, Bhatt et al., ICLR 2024: BatchRenorm networks,
no target critics, (s, a) and (s', a') in one training-mode pass; `policy_freq` 3 delays
actor and temperature as published) or quantile (TQC, Kuznetsov et al., 2020: the actor
maximises the mean over all critics' quantiles); SAC lends each its sampled next action
and entropy term (`_next`) and reads the whole ensemble in the actor's loss
(`critics.actor_value`). Around it, each a field and off by default: the accelerator
parts (as TD3's), SimBa's network families (the `simba` preset), and TD7's SALE and LAP
(`--preset sac-sale`; no published recipe combines them with SAC): actor and critics
read the fixed encoders, the target critics the fixed target encoders.
"""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jax_rl.algos import common, critics, exploration, mrq, sale, targets
from jax_rl.algos.critics import quantile
from jax_rl.core import normalization
from jax_rl.core.transition import Transition
from jax_rl.networks import EnsembleCritic, GaussianPolicy, squash, tanh_gaussian_sample


class Config(flax.struct.PyTreeNode):
    """SAC hyperparameters. Shapes are static; the rest are traced."""

    hidden_sizes: tuple[int, ...] = common.shared("hidden_sizes")
    layer_init: str = common.field(
        "lecun", "layer initialisation: pytorch (uniform +-1/sqrt(fan_in)) or lecun", static=True
    )
    actor_lr: float = common.shared("actor_lr")
    critic_lr: float = common.shared("critic_lr")
    alpha_lr: float = common.field(
        3e-4,
        "Adam learning rate of log(alpha), the entropy temperature; 0 keeps alpha at "
        "init_alpha (SAC with a fixed temperature, Haarnoja et al., 2018a)",
    )
    discount: float = common.shared("discount")
    tau: float = common.field(0.005, "Polyak rate of the target critics")
    init_alpha: float = common.field(1.0, "initial entropy temperature alpha")
    target_entropy_per_dim: float = common.field(
        -1.0, "target entropy per action dimension; the target is this times A (-A by default)"
    )
    hold_exploration: bool = exploration.hold_field()
    alpha_min: float = exploration.temperature_floor_field()
    exploration_share: float = exploration.share_field()
    share_horizon: int = exploration.share_horizon_field()
    # The accelerator-scale recipe (the same fields as TD3's).
    actor_hidden_sizes: tuple[int, ...] = common.shared("actor_hidden_sizes")
    critic_hidden_sizes: tuple[int, ...] = common.shared("critic_hidden_sizes")
    critic: str = critics.critic_field()
    num_critics: int = quantile.num_critics_field()
    num_quantiles: int = quantile.num_quantiles_field()
    quantiles_dropped: int = quantile.quantiles_dropped_field()
    num_atoms: int = common.shared("num_atoms")
    v_min: float = common.shared("v_min")
    v_max: float = common.shared("v_max")
    weight_decay: float = common.shared("weight_decay")
    normalize_obs: bool = common.shared("normalize_obs")
    scale_rewards: bool = common.scale_rewards_field()
    matmul_dtype: str = common.shared("matmul_dtype")
    actor_obs_size: int = common.shared("actor_obs_size")
    # Network families and CrossQ (the same fields as TD3's).
    actor_network: str = common.network_field("actor")
    critic_network: str = common.network_field("critic")
    actor_blocks: int = common.blocks_field("actor", 1)
    critic_blocks: int = common.blocks_field("critic", 2)
    crossq: bool = common.crossq_field("critics")
    renorm_momentum: float = common.renorm_momentum_field()
    renorm_warmup: int = common.renorm_warmup_field()
    adam_beta1: float = common.adam_beta1_field()
    policy_freq: int = common.field(
        1, "critic updates per actor and temperature update (CrossQ: 3)", static=True
    )
    # Representations and prioritised replay (TD7's parts; the same fields as TD3's).
    representation: str = sale.representation_field()
    encoder_hidden_sizes: tuple[int, ...] = sale.encoder_hidden_sizes_field()
    embedding_size: int = sale.embedding_size_field()
    encoder_lr: float = sale.encoder_lr_field()
    encoder_every: int = sale.encoder_every_field()
    # MR.Q's representation (`jax_rl.algos.mrq`; the same fields as TD3's).
    action_embedding_size: int = mrq.action_embedding_size_field()
    encoder_horizon: int = mrq.encoder_horizon_field()
    value_horizon: int = mrq.value_horizon_field()
    num_bins: int = mrq.num_bins_field()
    reward_bound: float = mrq.reward_bound_field()
    dynamics_weight: float = mrq.dynamics_weight_field()
    reward_weight: float = mrq.reward_weight_field()
    done_weight: float = mrq.done_weight_field()
    encoder_weight_decay: float = mrq.encoder_weight_decay_field()
    infonce_weight: float = mrq.infonce_weight_field()
    infonce_temperature: float = mrq.infonce_temperature_field()
    value_scaling: bool = mrq.value_scaling_field()
    replay: str = common.replay_field()
    lap_alpha: float = common.lap_alpha_field()
    replay_fade: float = common.replay_fade_field()
    replay_fade_floor: float = common.replay_fade_floor_field()

    def __post_init__(self) -> None:
        common.check_hidden_sizes(self)
        common.check_init(self)
        common.check_recipe(self)
        common.check_networks(self, common.actor_sizes(self), common.critic_sizes(self))
        common.check_fields(
            self,
            positive=("actor_lr", "critic_lr", "init_alpha"),
            non_negative=("alpha_lr", "weight_decay"),
            unit_interval=("discount", "tau"),
            positive_ints=("policy_freq",),
        )
        sale.check(self)
        common.check_replay(self)
        critics.check(self)
        exploration.check_temperature_floor(self)
        exploration.check_share(self)


class State(flax.struct.PyTreeNode):
    actor_params: Any
    critic_params: Any
    target_critic_params: Any  # None with crossq
    actor_stats: Any  # running statistics of a BatchRenorm actor (crossq), else None
    critic_stats: Any  # the same of the critics
    log_alpha: jax.Array
    actor_opt_state: optax.OptState
    critic_opt_state: optax.OptState
    alpha_opt_state: optax.OptState
    step: jax.Array  # updates done so far
    # The latest actor update's metrics with policy_freq > 1 (shown between updates), else None.
    actor_metrics: dict[str, jax.Array] | None
    obs_stats: Any  # normalization.ObsStats with normalize_obs, else None
    reward_stats: Any  # normalization.RewardStats with scale_rewards, else None
    encoders: Any  # sale.Encoders with representation sale, else None
    reward_watch: Any  # exploration.RewardWatch with hold_exploration, else None
    config: Config
    action_size: int = flax.struct.field(pytree_node=False)


def _networks(
    config: Config, action_size: int, train: bool = False
) -> tuple[GaussianPolicy, EnsembleCritic]:
    """The actor and the critics; `train`: their BatchRenorm layers (crossq) in training mode."""
    policy = GaussianPolicy(
        common.actor_sizes(config),
        action_size,
        layer_init=config.layer_init,
        matmul_dtype=config.matmul_dtype,
        network=common.network_family(config, "actor"),
        blocks=config.actor_blocks,
        renorm=common.renorm(config, train),
    )
    return policy, critics.network(config, train)


def _actor_variables(state: State) -> dict:
    return common.variables(state.actor_params, state.actor_stats)


def _critic_variables(state: State) -> dict:
    return common.variables(state.critic_params, state.critic_stats)


def _next(
    state: State, next_obs: jax.Array, key: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """What the critic recipe's target reads at s' (normalised): the critics' input, a' ~
    pi(.|s') [B, A] and the entropy term alpha * log pi(a'|s') [B]. With SALE the actor
    reads the fixed encoders, the critics the fixed target encoders."""
    cfg = state.config
    actor, _ = _networks(cfg, state.action_size)
    fixed, fixed_target = sale.copies(state.encoders)
    actor_obs, critic_obs = common.views(cfg, next_obs)
    mean, log_std = actor.apply(_actor_variables(state), sale.actor_input(fixed, actor_obs)[0])
    next_action, next_log_prob = tanh_gaussian_sample(mean, log_std, key)
    _, target_zs = sale.actor_input(fixed_target, actor_obs)
    critic_in = sale.critic_input(fixed_target, critic_obs, next_action, target_zs)
    return critic_in, next_action, jnp.exp(state.log_alpha) * next_log_prob


SIDE = critics.Side(_next, scale=0.5)


def actor_loss(
    actor_params: Any, state: State, obs: jax.Array, key: jax.Array
) -> tuple[jax.Array, tuple[jax.Array, Any]]:
    """mean_B (alpha log pi(a~|s) - min_i Q_i(s, a~)) (a categorical critic's Q: the mean
    of the distribution of lower mean); also returns log pi [B] and the actor's running
    statistics after this training-mode pass (crossq; else None). obs is normalised."""
    cfg = state.config
    actor, _ = _networks(cfg, state.action_size, train=True)
    _, critic = _networks(cfg, state.action_size)
    fixed, _ = sale.copies(state.encoders)
    actor_obs, critic_obs = common.views(cfg, obs)
    actor_in, zs = sale.actor_input(fixed, actor_obs)
    (mean, log_std), actor_stats = common.apply_train(
        actor, actor_params, state.actor_stats, actor_in
    )
    action, log_prob = tanh_gaussian_sample(mean, log_std, key)
    critic_in = sale.critic_input(fixed, critic_obs, action, zs)
    q = critics.actor_value(critic.apply(_critic_variables(state), critic_in, action), cfg)
    return (jnp.exp(state.log_alpha) * log_prob - q).mean(), (log_prob, actor_stats)


def alpha_loss(log_alpha: jax.Array, log_prob: jax.Array, target_entropy: jax.Array) -> jax.Array:
    """-mean_B log_alpha (log pi + target_entropy); log_prob [B] is a constant."""
    return -(log_alpha * (log_prob + target_entropy)).mean()


def init(
    key: jax.Array, obs_size: int, action_size: int, config: Config, num_envs: int = 1
) -> State:
    """A fresh learner for observations [O] and actions [A] (num_envs: the environments
    stepped together, whose returns `scale_rewards` follows one by one)."""
    actor, critic = _networks(config, action_size)
    actor_vars, critic_vars, encoders = sale.init_networks(
        key, actor, critic, obs_size, action_size, config
    )
    actor_params, actor_stats = common.split_variables(actor_vars)
    critic_params, critic_stats = common.split_variables(critic_vars)
    log_alpha = jnp.log(jnp.float32(config.init_alpha))
    return State(
        actor_params=actor_params,
        critic_params=critic_params,
        target_critic_params=(
            common.copy(critic_params) if critics.keeps_targets(config) else None
        ),
        actor_stats=actor_stats,
        critic_stats=critic_stats,
        log_alpha=log_alpha,
        actor_opt_state=common.adam_init(actor_params),
        critic_opt_state=common.adam_init(critic_params),
        alpha_opt_state=common.adam_init(log_alpha),
        step=jnp.int32(0),
        actor_metrics=(
            {name: jnp.float32(0.0) for name in ACTOR_METRICS} if config.policy_freq > 1 else None
        ),
        obs_stats=common.init_obs_stats(config, obs_size),
        reward_stats=common.init_reward_stats(config, num_envs),
        encoders=encoders,
        reward_watch=exploration.init(config),
        config=common.as_traced(config),
        action_size=action_size,
    )


def act(
    state: State,
    obs: jax.Array,
    key: jax.Array,
    deterministic: bool,
    noise: jax.Array | None = None,
) -> jax.Array:
    """obs [B, O] (raw) -> action [B, A]: tanh(mean) if deterministic, else a sample
    (its standard-normal draw from `key`, or `noise` [B, A] where given)."""
    actor, _ = _networks(state.config, state.action_size)
    actor_obs, _ = common.views(state.config, normalization.normalize(state.obs_stats, obs))
    fixed, _ = sale.copies(state.encoders)
    mean, log_std = actor.apply(_actor_variables(state), sale.actor_input(fixed, actor_obs)[0])
    if deterministic:
        return squash(mean)
    action, _ = tanh_gaussian_sample(mean, log_std, key, noise)
    return action


def observe(state: State, transition: Transition) -> State:
    """`common.observe`, then the representation's statistics (MR.Q's reward scale)."""
    return sale.learner_observe(common.observe(state, transition), transition)


def horizon(config: Config) -> int:
    """Rows per sub-trajectory of its batches (`jax_rl.algos`): MR.Q's, or the share's."""
    return max(sale.horizon(config), exploration.share_horizon(config))


prioritized = common.prioritized  # whether the loops keep priorities (`jax_rl.algos`)
fade = common.fade  # DR.Q's fade of the prioritised sampling, or None (`jax_rl.algos`)


ACTOR_METRICS = ("loss/actor", "loss/alpha", "dual/alpha", "policy/entropy")


def _update_actor(
    state: State, obs: jax.Array, key: jax.Array
) -> tuple[State, jax.Array, jax.Array]:
    (loss, (log_prob, actor_stats)), grads = jax.value_and_grad(actor_loss, has_aux=True)(
        state.actor_params, state, obs, key
    )
    params, opt_state = common.network_step(
        state.actor_params, grads, state.actor_opt_state, state.config.actor_lr, state.config
    )
    state = state.replace(actor_params=params, actor_opt_state=opt_state, actor_stats=actor_stats)
    return state, loss, log_prob


def _update_alpha(state: State, log_prob: jax.Array) -> tuple[State, jax.Array]:
    target_entropy = state.config.target_entropy_per_dim * state.action_size
    loss, grad = jax.value_and_grad(alpha_loss)(
        state.log_alpha, jax.lax.stop_gradient(log_prob), target_entropy
    )
    stepped = common.adam_step(state.log_alpha, grad, state.alpha_opt_state, state.config.alpha_lr)
    # With hold_exploration, alpha steps only where the batch held rewards that differ.
    log_alpha, opt_state = exploration.unless_held(
        state.reward_watch, stepped, (state.log_alpha, state.alpha_opt_state), now=True
    )
    log_alpha = exploration.floor_temperature(state.config, log_alpha)
    return state.replace(log_alpha=log_alpha, alpha_opt_state=opt_state), loss


def _update_actor_and_alpha(
    state: State, obs: jax.Array, key: jax.Array
) -> tuple[State, dict[str, jax.Array]]:
    state, loss_actor, log_prob = _update_actor(state, obs, key)
    state, loss_alpha = _update_alpha(state, log_prob)
    metrics = {
        "loss/actor": loss_actor,
        "loss/alpha": loss_alpha,
        "dual/alpha": jnp.exp(state.log_alpha),
        "policy/entropy": -log_prob.mean(),
    }
    return state, metrics


def _delayed_actor_and_alpha(state: State, obs: jax.Array, key: jax.Array) -> State:
    """The actor and temperature updated, their metrics kept in the state."""
    state, metrics = _update_actor_and_alpha(state, obs, key)
    return state.replace(actor_metrics=metrics)


def update(state: State, batch: Transition, key: jax.Array) -> tuple[State, dict[str, jax.Array]]:
    """With SALE first one encoder update; then the critics; then actor and temperature
    (every `policy_freq`-th call); then the Polyak-averaged target critics (none with
    crossq); with SALE the fixed encoders swap every encoder_every-th call. batch holds
    raw observations (normalised here with the state's statistics, rewards scaled with
    scale_rewards). With LAP the metrics carry the rows' new priorities
    (`replay.PRIORITY_KEY`, [B])."""
    state = state.replace(
        reward_watch=exploration.observe(state.reward_watch, batch.reward, state.step)
    )
    batch, returns = exploration.share_returns(state.config, state.reward_watch, batch)
    batch = common.normalize_batch(state, batch)
    critic_key, actor_key = jax.random.split(key)
    state, batch = sale.learner_update(state, batch)
    state, loss_critic, priority = critics.update(SIDE, state, batch, critic_key)
    state = state.replace(step=state.step + 1)
    actor_metrics: dict[str, jax.Array]
    if state.config.policy_freq == 1:
        state, actor_metrics = _update_actor_and_alpha(state, batch.obs, actor_key)
    else:
        state = jax.lax.cond(
            state.step % state.config.policy_freq == 0,
            _delayed_actor_and_alpha,
            lambda s, *_: s,
            state,
            batch.obs,
            actor_key,
        )
        assert state.actor_metrics is not None  # held between delayed updates
        actor_metrics = state.actor_metrics
    if critics.keeps_targets(state.config):
        state = targets.polyak(state, ("critic",))
    metrics = {
        "loss/critic": loss_critic,
        **actor_metrics,
        **exploration.metrics(state.reward_watch),
        **returns,
    }
    state, metrics = sale.learner_swap(state, metrics)
    return state, common.with_priority(metrics, priority)
