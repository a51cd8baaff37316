"""TD3: Twin Delayed Deep Deterministic policy gradient (Fujimoto et al., 2018).

Equations (B batch, A action size):
    a' = clip(pi_targ(s') + clip(N(0, policy_noise), -noise_clip, noise_clip), -1, 1)
    y  = r + gamma * d * min_i Q_targ_i(s', a')
    L_critic = sum_i mean_B (Q_i(s, a) - y)^2
    L_actor  = -mean_B Q_1(s, pi(s))                      every policy_freq updates
    targets  <- Polyak(tau) of actor and critics           every policy_freq updates

Our choices, as in the paper's reference code: 256-256 ReLU networks, Adam
3e-4 for both nets, the actor's loss uses the first critic only, the twin
critics are one vmapped ensemble, and exploration adds N(0, exploration_noise)
to the deterministic action, clipped to [-1, 1]. Optionally (exploration_decay
> 0, off by default) the exploration std starts higher and falls linearly to
exploration_noise, as DrQ-v2 schedules its DDPG's noise. `d` is the transition's
discount mask (0 only at a true terminal; see `jax_rl.core.transition.Transition`).

The critic is a recipe (`jax_rl.algos.critics`, `critic`): scalar (the equations above),
categorical (C51, FastTD3's), crossq (CrossQ, Bhatt et al., ICLR 2024: BatchRenorm
networks, no target actor or critics, (s, a) and (s', a') in one training-mode pass) or
quantile (TQC's truncated quantiles, Kuznetsov et al., 2020); TD3 lends each its target
policy smoothing (`_next`) and reads its first critic's Q in the actor's loss. Around it,
each a field and off by default: FastTD3's accelerator parts (observation normalisation,
separate widths, AdamW, bf16 products, an asymmetric actor, an exploration std drawn per
environment and episode, `episode_draw`); SimBa's network families; and TD7's parts
(Fujimoto et al., NeurIPS 2023; `--preset td7`): SALE embeddings (`jax_rl.algos.sale`),
LAP replay (`replay = "lap"`, `common.td_loss`; DR.Q's fade of its draw by age,
`replay_fade`), hard target copies every `target_every` updates in place of Polyak
averaging, and value clipping (`clip_values`, `critics.scalar`). TD7's policy checkpoints
are not built: see docs/algorithms.md. MR.Q (Fujimoto et al., ICLR 2025; `--preset mrq`)
is the same learner with MR.Q's representation (`representation = "mrq"`,
`jax_rl.algos.mrq`): its batches are sub-trajectories, from which the encoders learn a
latent model and the critics a multi-step, reward-scaled return; with LAP, hard copies and
policy_freq 1.
"""

from __future__ import annotations

import functools
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jax_rl.algos import common, critics, exploration, mrq, sale, targets
from jax_rl.algos.critics import quantile, scalar
from jax_rl.core import normalization
from jax_rl.core.transition import Transition
from jax_rl.networks import DeterministicPolicy, EnsembleCritic, ensemble_member


class Config(flax.struct.PyTreeNode):
    """TD3 hyperparameters. Shapes and the actor delay are static; the rest (the
    exploration schedule's length included) are traced."""

    hidden_sizes: tuple[int, ...] = common.shared("hidden_sizes")
    layer_init: str = common.field(
        "pytorch", "layer initialisation: pytorch (uniform +-1/sqrt(fan_in)) or lecun", static=True
    )
    policy_freq: int = common.field(
        2, "critic updates per actor and target update (the 'delay')", static=True
    )
    actor_lr: float = common.shared("actor_lr")
    critic_lr: float = common.shared("critic_lr")
    discount: float = common.shared("discount")
    tau: float = common.field(0.005, "Polyak rate of the target networks")
    policy_noise: float = common.field(
        0.2, "std of the noise added to target actions (target policy smoothing)"
    )
    noise_clip: float = common.field(0.5, "bound on the absolute value of that noise")
    exploration_noise: float = common.field(
        0.1, "std of the Gaussian noise added to actions while collecting"
    )
    exploration_decay: int = exploration.decay_field()
    initial_exploration_noise: float = exploration.initial_noise_field()
    hold_exploration: bool = exploration.hold_field()
    exploration_share: float = exploration.share_field()
    share_horizon: int = exploration.share_horizon_field()
    exploration_noise_min: float = exploration.noise_min_field()
    # The accelerator-scale recipe (the same fields as SAC's).
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
    # Network families and CrossQ (the same fields as SAC's).
    actor_network: str = common.network_field("actor")
    critic_network: str = common.network_field("critic")
    actor_blocks: int = common.blocks_field("actor", 1)
    critic_blocks: int = common.blocks_field("critic", 2)
    crossq: bool = common.crossq_field("networks")
    renorm_momentum: float = common.renorm_momentum_field()
    renorm_warmup: int = common.renorm_warmup_field()
    adam_beta1: float = common.adam_beta1_field()
    # Representations and prioritised replay (TD7; the same fields as SAC's).
    representation: str = sale.representation_field()
    encoder_hidden_sizes: tuple[int, ...] = sale.encoder_hidden_sizes_field()
    embedding_size: int = sale.embedding_size_field()
    encoder_lr: float = sale.encoder_lr_field()
    encoder_every: int = sale.encoder_every_field()
    # MR.Q's representation (`jax_rl.algos.mrq`; the same fields as SAC's).
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
    target_every: int = targets.every_field()
    clip_values: bool = scalar.clip_values_field()

    def __post_init__(self) -> None:
        common.check_hidden_sizes(self)
        common.check_init(self)
        common.check_recipe(self)
        common.check_networks(self, common.actor_sizes(self), common.critic_sizes(self))
        common.check_fields(
            self,
            positive=("actor_lr", "critic_lr"),
            non_negative=(
                "policy_noise",
                "noise_clip",
                "exploration_noise",
                "exploration_decay",
                "initial_exploration_noise",
                "exploration_noise_min",
                "weight_decay",
            ),
            unit_interval=("discount", "tau"),
            positive_ints=("policy_freq",),
        )
        sale.check(self)
        common.check_replay(self)
        targets.check_every(self, "TD3")
        critics.check(self)
        exploration.check_schedule(self)


class State(flax.struct.PyTreeNode):
    actor_params: Any
    critic_params: Any
    target_actor_params: Any  # None with crossq
    target_critic_params: Any  # None with crossq
    actor_stats: Any  # running statistics of a BatchRenorm actor (crossq), else None
    critic_stats: Any  # the same of the critics
    actor_opt_state: optax.OptState
    critic_opt_state: optax.OptState
    actor_loss: jax.Array  # loss at the latest (delayed) actor update, for metrics
    step: jax.Array  # updates done so far
    obs_stats: Any  # normalization.ObsStats with normalize_obs, else None
    reward_stats: Any  # normalization.RewardStats with scale_rewards, else None
    encoders: Any  # sale.Encoders with representation sale, else None
    # clip_values: [the clip's low, high, the lowest and highest TD target seen], else None
    value_range: Any
    reward_watch: Any  # exploration.RewardWatch with hold_exploration, else None
    config: Config
    action_size: int = flax.struct.field(pytree_node=False)


def _networks(
    config: Config, action_size: int, train: bool = False
) -> tuple[DeterministicPolicy, EnsembleCritic]:
    """The actor and the critics; `train`: their BatchRenorm layers (crossq) in training mode."""
    actor = DeterministicPolicy(
        common.actor_sizes(config),
        action_size,
        layer_init=config.layer_init,
        matmul_dtype=config.matmul_dtype,
        network=common.network_family(config, "actor"),
        blocks=config.actor_blocks,
        renorm=common.renorm(config, train),
    )
    return actor, critics.network(config, train)


def _actor_variables(state: State) -> dict:
    return common.variables(state.actor_params, state.actor_stats)


def _next(state: State, next_obs: jax.Array, key: jax.Array) -> tuple[jax.Array, jax.Array, None]:
    """What the critic recipe's target reads at s' (normalised): the critics' input, the
    smoothed action a' = clip(pi_targ(s') + clip(N(0, policy_noise), +-noise_clip), -1, 1)
    [B, A] (the actor itself where there is no target actor: crossq), and no entropy term.
    With SALE both read the fixed target encoders."""
    cfg = state.config
    actor, _ = _networks(cfg, state.action_size)
    _, encoder = sale.copies(state.encoders)
    actor_obs, critic_obs = common.views(cfg, next_obs)
    actor_in, zs = sale.actor_input(encoder, actor_obs)
    params = state.target_actor_params
    params = _actor_variables(state) if params is None else params
    noise = cfg.policy_noise * jax.random.normal(key, actor_in.shape[:-1] + (state.action_size,))
    noise = jnp.clip(noise, -cfg.noise_clip, cfg.noise_clip)
    next_action = jnp.clip(actor.apply(params, actor_in) + noise, -1.0, 1.0)
    return sale.critic_input(encoder, critic_obs, next_action, zs), next_action, None


SIDE = critics.Side(_next, scale=1.0)


def actor_loss(actor_params: Any, state: State, obs: jax.Array) -> tuple[jax.Array, Any]:
    """-mean_B Q_1(s, pi(s)) (a categorical critic's Q: its mean); obs [B, O], normalised.
    Also returns the actor's running statistics after its training-mode pass (crossq;
    else None); the critic reads its own running statistics."""
    cfg = state.config
    actor, _ = _networks(cfg, state.action_size, train=True)
    encoder, _ = sale.copies(state.encoders)
    actor_obs, critic_obs = common.views(cfg, obs)
    actor_in, zs = sale.actor_input(encoder, actor_obs)
    critic_variables = common.variables(state.critic_params, state.critic_stats)
    first_critic = ensemble_member(critic_variables, 0)
    critic = critics.network(cfg, train=False, ensemble=False)
    action, actor_stats = common.apply_train(actor, actor_params, state.actor_stats, actor_in)
    out = critic.apply(first_critic, sale.critic_input(encoder, critic_obs, action, zs), action)
    q = critics.recipe(cfg).value(out, cfg)
    return -q.mean(), actor_stats


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
    targets = critics.keeps_targets(config)
    return State(
        actor_params=actor_params,
        critic_params=critic_params,
        target_actor_params=common.copy(actor_params) if targets else None,
        target_critic_params=common.copy(critic_params) if targets else None,
        actor_stats=actor_stats,
        critic_stats=critic_stats,
        actor_opt_state=common.adam_init(actor_params),
        critic_opt_state=common.adam_init(critic_params),
        actor_loss=jnp.float32(0.0),
        step=jnp.int32(0),
        obs_stats=common.init_obs_stats(config, obs_size),
        reward_stats=common.init_reward_stats(config, num_envs),
        encoders=encoders,
        value_range=scalar.init_value_range() if config.clip_values else None,
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
    episode_draw: jax.Array | None = None,
) -> jax.Array:
    """obs [B, O] (raw) -> action [B, A] in [-1, 1]; Gaussian noise unless deterministic.

    The noise is the exploration std (`exploration_std`) times a standard-normal
    draw from `key`, or times `noise` [B, A] where given (colored exploration
    noise, `jax_rl.core.noise`). With exploration_noise_min > 0 and `episode_draw` [B]
    (uniform in [0, 1), drawn by the loop when each environment's episode
    starts), row b's std is exploration_noise_min + draw_b * (std -
    exploration_noise_min).
    """
    actor, _ = _networks(state.config, state.action_size)
    actor_obs, _ = common.views(state.config, normalization.normalize(state.obs_stats, obs))
    encoder, _ = sale.copies(state.encoders)
    actor_in, _ = sale.actor_input(encoder, actor_obs)
    action = actor.apply(_actor_variables(state), actor_in)
    if deterministic:
        return action
    if noise is None:
        noise = jax.random.normal(key, action.shape)
    # Held, before any batch with rewards that differ: the actor's action carries no
    # information yet (a flat critic), and noise around a saturated one pins the system to
    # a wall: explore around zero (`jax_rl.algos.exploration`).
    action = exploration.unless_held(state.reward_watch, action, jnp.zeros_like(action))
    std = exploration_std(state)
    if episode_draw is not None:
        low = state.config.exploration_noise_min
        drawn = low + episode_draw[:, None] * (std - low)
        std = jnp.where(low > 0, drawn, std)
    return jnp.clip(action + std * noise, -1.0, 1.0)


def observe(state: State, transition: Transition) -> State:
    """`common.observe`, then the representation's statistics (MR.Q's reward scale)."""
    return sale.learner_observe(common.observe(state, transition), transition)


def horizon(config: Config) -> int:
    """Rows per sub-trajectory of its batches (`jax_rl.algos`): MR.Q's, or the share's."""
    return max(sale.horizon(config), exploration.share_horizon(config))


prioritized = common.prioritized  # whether the loops keep priorities (`jax_rl.algos`)
fade = common.fade  # DR.Q's fade of the prioritised sampling, or None (`jax_rl.algos`)
DRAWS_PER_EPISODE = True  # act takes episode_draw (`jax_rl.algos`)


def exploration_std(state: State) -> jax.Array:
    """The exploration std after `state.step` updates (`exploration.scheduled_std`)."""
    return exploration.scheduled_std(state.config, state.reward_watch, state.step)


def _update_actor_and_targets(state: State, obs: jax.Array) -> State:
    (loss, actor_stats), grads = jax.value_and_grad(actor_loss, has_aux=True)(
        state.actor_params, state, obs
    )
    params, opt_state = common.network_step(
        state.actor_params, grads, state.actor_opt_state, state.config.actor_lr, state.config
    )
    state = state.replace(
        actor_params=params, actor_opt_state=opt_state, actor_stats=actor_stats, actor_loss=loss
    )
    if not critics.keeps_targets(state.config) or state.config.target_every > 0:
        return state  # none, or hard copies (`update`)
    return targets.polyak(state, NETS)


NETS = ("actor", "critic")  # the nets with targets


def update(state: State, batch: Transition, key: jax.Array) -> tuple[State, dict[str, jax.Array]]:
    """With SALE or MR.Q first one encoder update (MR.Q: on the batch's sub-trajectories,
    whose multi-step transitions the critics and actor then read); then one critic
    update; every `policy_freq`-th call also the actor and (Polyak) targets (no targets
    with crossq); with target_every > 0 hard target copies every target_every-th call;
    with SALE the fixed encoders swap every encoder_every-th call (MR.Q's at the start
    of the call). batch holds raw observations (normalised here with the
    state's statistics). With LAP the metrics carry the rows' new priorities
    (`replay.PRIORITY_KEY`, [B])."""
    cfg = state.config
    state = state.replace(
        reward_watch=exploration.observe(state.reward_watch, batch.reward, state.step)
    )
    batch, returns = exploration.share_returns(cfg, state.reward_watch, batch)
    batch = common.normalize_batch(state, batch)
    state, batch = sale.learner_update(state, batch)
    state, loss, priority = critics.update(SIDE, state, batch, key)
    state = state.replace(step=state.step + 1)
    state = jax.lax.cond(
        state.step % cfg.policy_freq == 0,
        _update_actor_and_targets,
        lambda s, _: s,
        state,
        batch.obs,
    )
    if cfg.target_every > 0:
        copy = functools.partial(targets.copy, nets=NETS)
        state = jax.lax.cond(state.step % cfg.target_every == 0, copy, lambda s: s, state)
    metrics = {
        "loss/critic": loss,
        "loss/actor": state.actor_loss,
        **exploration.metrics(state.reward_watch),
        **returns,
    }
    state, metrics = sale.learner_swap(state, metrics)
    return state, common.with_priority(metrics, priority)
