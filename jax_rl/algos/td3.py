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
discount mask (0 only at a true terminal; see `jax_rl.transition.Transition`).

The accelerator-scale recipe (FastTD3, Seo et al., 2025), every part off by
default: a categorical critic (`critic = "categorical"`, `jax_rl.algos.categorical`:
the critics' loss is the cross-entropy to the projected target distribution of
the critic with the lower mean, and the actor maximises the first critic's
mean); observation normalisation (`normalize_obs`, `jax_rl.normalization`);
separate actor and critic widths; AdamW's decoupled weight decay; bf16 matrix
products; an asymmetric actor and critics (`actor_obs_size`, set by the
environment); and an exploration std drawn per environment at each episode
start, uniform in [exploration_noise_min, exploration_noise], where the loop
hands `act` that draw (`episode_draw`; the device pipeline does).

Network families (`jax_rl.networks.body`): `actor_network` / `critic_network` simba
puts SimBa's residual blocks in place of the MLP. `crossq` is CrossQ (Bhatt et al.,
ICLR 2024) on TD3, as the CrossQ paper's TD3 variant: BatchRenorm networks, no
target actor or critics; the critics' loss runs (s, a) and (s', a') through the
critics in one training-mode pass and takes the target from its second half:
    a' = clip(pi(s') + clip(N(0, policy_noise), +-noise_clip), -1, 1)   (running statistics)
    y  = r + gamma * d * min_i sg(Q_i(s', a'))
The actor's loss reads the first critic with its running statistics while the actor
runs in training mode.

TD7 (Fujimoto et al., NeurIPS 2023; `--preset td7`) is TD3 with four parts, each a field:
SALE embeddings (`representation = "sale"`, `jax_rl.algos.sale`: the encoders train
first in each update; actor and critics read the fixed copy, the target the fixed target
copy); LAP prioritised replay (`replay = "lap"`: the critics' loss is Huber and the update
returns the rows' priorities max(max_i |delta_i|, 1)^lap_alpha, `common.td_loss`); hard
target updates every `target_every` updates in place of Polyak averaging; and value
clipping (`clip_values`): the target critics' min_i Q_targ_i(s', a') is clipped to
[the lowest, the highest] TD target seen up to the latest target update (both 0 before
the first). TD7's policy checkpoints are not built: see docs/algorithms.md.
"""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jax_rl import normalization
from jax_rl.algos import categorical, common, exploration, sale
from jax_rl.networks import (
    Critic,
    DeterministicPolicy,
    EnsembleCritic,
    Renorm,
    ensemble_member,
    polyak_update,
)
from jax_rl.transition import Transition


class Config(flax.struct.PyTreeNode):
    """TD3 hyperparameters. Shapes and the actor delay are static; the rest (the
    exploration schedule's length included) are traced."""

    hidden_sizes: tuple[int, ...] = common.field(
        (256, 256), "hidden layer sizes of the actor and of each critic", static=True
    )
    layer_init: str = common.field(
        "pytorch", "layer initialisation: pytorch (uniform +-1/sqrt(fan_in)) or lecun", static=True
    )
    policy_freq: int = common.field(
        2, "critic updates per actor and target update (the 'delay')", static=True
    )
    actor_lr: float = common.field(3e-4, "Adam learning rate of the actor")
    critic_lr: float = common.field(3e-4, "Adam learning rate of the critics")
    discount: float = common.field(0.99, "gamma, the per-step discount of future rewards")
    tau: float = common.field(0.005, "Polyak rate of the target networks")
    policy_noise: float = common.field(
        0.2, "std of the noise added to target actions (target policy smoothing)"
    )
    noise_clip: float = common.field(0.5, "bound on the absolute value of that noise")
    exploration_noise: float = common.field(
        0.1, "std of the Gaussian noise added to actions while collecting"
    )
    exploration_decay: int = common.field(
        0,
        "updates over which the exploration std falls linearly from initial_exploration_noise "
        "to exploration_noise (0: exploration_noise throughout, as published)",
    )
    initial_exploration_noise: float = common.field(
        1.0, "exploration std at update 0, the start of the schedule, when exploration_decay > 0"
    )
    hold_exploration: bool = exploration.hold_field()
    exploration_noise_min: float = common.field(
        0.0,
        "> 0: each environment draws its exploration std uniformly in [this, "
        "exploration_noise] at every episode start (FastTD3's std_min; device pipeline)",
    )
    # The accelerator-scale recipe (the same fields as SAC's).
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
    scale_rewards: bool = common.scale_rewards_field()
    matmul_dtype: str = common.field(
        "float32", "dtype of the matrix products: float32 or bf16", static=True
    )
    actor_obs_size: int = common.field(
        0, "features of the observation the actor sees (0: all)", static=True, flag=False
    )
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
    replay: str = common.replay_field()
    lap_alpha: float = common.lap_alpha_field()
    target_every: int = common.field(
        0,
        "> 0: hard target copies every this many updates (TD7: 250), no Polyak",
        static=True,
    )
    clip_values: bool = common.field(
        False,
        "clip target values to the range of TD targets seen (TD7)",
        static=True,
    )

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
        every = self.target_every
        if not isinstance(every, int) or isinstance(every, bool) or every < 0:
            raise ValueError(f"TD3 target_every must be an integer >= 0, got {every!r}")
        if self.clip_values and (self.critic != "scalar" or self.crossq):
            raise ValueError("TD3 clip_values takes the scalar critic with target networks "
                             "(not categorical, not crossq)")  # fmt: skip
        common.check_crossq_targets(self)
        if self.hold_exploration and common.is_concrete_number(self.exploration_decay):
            if self.exploration_decay <= 0:
                raise ValueError(
                    "TD3 hold_exploration anneals its exploration std over exploration_decay "
                    "updates that sampled rewards that differ: give exploration_decay > 0 "
                    "(without a schedule the first reward would end the exploration at once)"
                )


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
    renorm: Renorm | None = common.renorm(config, train)
    actor = DeterministicPolicy(
        common.actor_sizes(config),
        action_size,
        layer_init=config.layer_init,
        matmul_dtype=config.matmul_dtype,
        network=config.actor_network,
        blocks=config.actor_blocks,
        renorm=renorm,
    )
    critic = EnsembleCritic(
        common.critic_sizes(config),
        layer_init=config.layer_init,
        num_atoms=common.num_atoms(config),
        matmul_dtype=config.matmul_dtype,
        network=config.critic_network,
        blocks=config.critic_blocks,
        renorm=renorm,
    )
    return actor, critic


def _actor_variables(state: State) -> dict:
    return common.variables(state.actor_params, state.actor_stats)


def _smoothed_next_action(
    state: State, actor_params: Any, next_actor_obs: jax.Array, key: jax.Array
) -> jax.Array:
    """clip(pi(s') + clip(N(0, policy_noise), +-noise_clip), -1, 1) [B, A] (target policy
    smoothing), pi with `actor_params` (variables) in evaluation mode."""
    cfg = state.config
    actor, _ = _networks(cfg, state.action_size)
    noise = cfg.policy_noise * jax.random.normal(
        key, next_actor_obs.shape[:-1] + (state.action_size,)
    )
    noise = jnp.clip(noise, -cfg.noise_clip, cfg.noise_clip)
    return jnp.clip(actor.apply(actor_params, next_actor_obs) + noise, -1.0, 1.0)


def _atoms(config: Config) -> jax.Array:
    return categorical.support(config.v_min, config.v_max, config.num_atoms)


def td_target(state: State, batch: Transition, key: jax.Array) -> jax.Array:
    """The TD target with target policy smoothing and clipped double Q: y [B], or for a
    categorical critic the projected target distribution [B, K]. batch is normalised.
    With SALE the targets read the fixed target encoders; with clip_values the target
    critics' value is clipped to `value_range`'s [low, high]."""
    _, critic = _networks(state.config, state.action_size)
    cfg = state.config
    _, encoder = sale.copies(state.encoders)
    actor_obs, critic_obs = common.views(cfg, batch.next_obs)
    actor_in, zs = sale.actor_input(encoder, actor_obs)
    next_action = _smoothed_next_action(state, state.target_actor_params, actor_in, key)
    critic_in = sale.critic_input(encoder, critic_obs, next_action, zs)
    next_out = critic.apply(state.target_critic_params, critic_in, next_action)
    if cfg.critic == "categorical":
        discount = cfg.discount * batch.discount
        return categorical.target_distribution(next_out, _atoms(cfg), batch.reward, discount)
    next_value = next_out.min(axis=0)
    if state.value_range is not None:
        next_value = jnp.clip(next_value, state.value_range[0], state.value_range[1])
    return batch.reward + cfg.discount * batch.discount * next_value


def critic_loss(
    critic_params: Any, state: State, batch: Transition, target: jax.Array
) -> tuple[jax.Array, jax.Array | None]:
    """sum over critics of mean_B (Q_i(s, a) - y)^2, target y [B] (LAP: of the Huber loss,
    `common.td_loss`); for a categorical critic their cross-entropies to the target
    distribution [B, K]. target is a constant. Also returns the rows' new priorities
    [B] with LAP, else None."""
    cfg = state.config
    _, critic = _networks(cfg, state.action_size)
    critic_in = sale.critic_view(sale.copies(state.encoders)[0], cfg, batch.obs, batch.action)
    out = critic.apply(critic_params, critic_in, batch.action)  # [E, B] or [E, B, K]
    if cfg.critic == "categorical":
        return categorical.cross_entropy(out, target), None
    return common.td_loss(out, target, cfg, scale=1.0)


def crossq_critic_loss(
    critic_params: Any, state: State, batch: Transition, key: jax.Array
) -> tuple[jax.Array, tuple[Any, jax.Array | None]]:
    """CrossQ's: sum over critics of mean_B (Q_i(s, a) - y)^2, where Q(s, a) and Q(s', a')
    [E, B] are the halves of one training-mode pass over the 2B rows [s | s'], [a | a']
    and y [B] takes the second half without gradient (LAP: the Huber loss). Returns the
    loss and (the critics' running statistics after the pass, the rows' new priorities
    with LAP or None). batch is normalised."""
    cfg = state.config
    _, critic = _networks(cfg, state.action_size, train=True)
    next_actor_obs, next_critic_obs = common.views(cfg, batch.next_obs)
    next_action = _smoothed_next_action(state, _actor_variables(state), next_actor_obs, key)
    _, critic_obs = common.views(cfg, batch.obs)
    joint_obs = jnp.concatenate([critic_obs, next_critic_obs])  # [2B, O]
    joint_action = jnp.concatenate([batch.action, next_action])  # [2B, A]
    out, critic_stats = common.apply_train(
        critic, critic_params, state.critic_stats, joint_obs, joint_action
    )
    q, next_q = jnp.split(out, 2, axis=1)  # [E, B] each
    next_value = jax.lax.stop_gradient(next_q).min(axis=0)
    target = batch.reward + cfg.discount * batch.discount * next_value
    loss, priority = common.td_loss(q, target, cfg, scale=1.0)
    return loss, (critic_stats, priority)


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
    critic = Critic(
        common.critic_sizes(cfg),
        layer_init=cfg.layer_init,
        num_atoms=common.num_atoms(cfg),
        matmul_dtype=cfg.matmul_dtype,
        network=cfg.critic_network,
        blocks=cfg.critic_blocks,
        renorm=common.renorm(cfg, train=False),
    )
    action, actor_stats = common.apply_train(actor, actor_params, state.actor_stats, actor_in)
    out = critic.apply(first_critic, sale.critic_input(encoder, critic_obs, action, zs), action)
    q = categorical.mean_value(out, _atoms(cfg)) if cfg.critic == "categorical" else out
    return -q.mean(), actor_stats


def init(
    key: jax.Array, obs_size: int, action_size: int, config: Config, num_envs: int = 1
) -> State:
    """A fresh learner for observations [O] and actions [A] (num_envs: the environments
    stepped together, whose returns `scale_rewards` follows one by one)."""
    actor, critic = _networks(config, action_size)
    actor_key, critic_key, encoder_key = jax.random.split(key, 3)
    obs = jnp.zeros((1, obs_size), jnp.float32)
    action = jnp.zeros((1, action_size), jnp.float32)
    actor_obs, critic_obs = common.views(config, obs)
    encoders = sale.init(encoder_key, actor_obs.shape[-1], action_size, config)
    encoder, _ = sale.copies(encoders)
    actor_in, zs = sale.actor_input(encoder, actor_obs)
    critic_in = sale.critic_input(encoder, critic_obs, action, zs)
    actor_params, actor_stats = common.split_variables(actor.init(actor_key, actor_in))
    critic_params, critic_stats = common.split_variables(critic.init(critic_key, critic_in, action))
    return State(
        actor_params=actor_params,
        critic_params=critic_params,
        target_actor_params=None if config.crossq else common.copy(actor_params),
        target_critic_params=None if config.crossq else common.copy(critic_params),
        actor_stats=actor_stats,
        critic_stats=critic_stats,
        actor_opt_state=common.adam_init(actor_params),
        critic_opt_state=common.adam_init(critic_params),
        actor_loss=jnp.float32(0.0),
        step=jnp.int32(0),
        obs_stats=common.init_obs_stats(config, obs_size),
        reward_stats=common.init_reward_stats(config, num_envs),
        encoders=encoders,
        value_range=_init_value_range() if config.clip_values else None,
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
    noise, `jax_rl.noise`). With exploration_noise_min > 0 and `episode_draw` [B]
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


observe = common.observe


def exploration_std(state: State) -> jax.Array:
    """The exploration std after `state.step` updates: exploration_noise, or with
    exploration_decay > 0 a straight line from initial_exploration_noise at update 0 to
    exploration_noise at update exploration_decay, flat after. With hold_exploration the
    schedule counts only updates that sampled rewards that differ (so the std is
    initial_exploration_noise until the first; `jax_rl.algos.exploration`)."""
    cfg = state.config
    decay = jnp.asarray(cfg.exploration_decay, jnp.float32)
    clock = exploration.schedule_clock(state.reward_watch, state.step)
    done = jnp.clip(clock / jnp.maximum(decay, 1.0), 0.0, 1.0)
    scheduled = cfg.initial_exploration_noise + done * (
        cfg.exploration_noise - cfg.initial_exploration_noise
    )
    return jnp.where(decay > 0, scheduled, cfg.exploration_noise)


def _init_value_range() -> jax.Array:
    """[clip low, clip high, lowest target seen, highest target seen]: the clip is [0, 0]
    until the first target update, as published; nothing seen is +-float32 max (finite:
    the loops' divergence watch reads every leaf of the state)."""
    big = float(jnp.finfo(jnp.float32).max)
    return jnp.array([0.0, 0.0, big, -big], jnp.float32)


def _update_critic(
    state: State, batch: Transition, key: jax.Array
) -> tuple[State, jax.Array, jax.Array | None]:
    """One critic step: (state, loss, the rows' new priorities with LAP or None)."""
    cfg = state.config
    if cfg.crossq:
        (loss, (critic_stats, priority)), grads = jax.value_and_grad(
            crossq_critic_loss, has_aux=True
        )(state.critic_params, state, batch, key)
        state = state.replace(critic_stats=critic_stats)
    else:
        target = td_target(state, batch, key)
        (loss, priority), grads = jax.value_and_grad(critic_loss, has_aux=True)(
            state.critic_params, state, batch, target
        )
        if state.value_range is not None:
            seen = state.value_range
            state = state.replace(value_range=seen.at[2].min(target.min()).at[3].max(target.max()))
    params, opt_state = common.adam_step(
        state.critic_params,
        grads,
        state.critic_opt_state,
        cfg.critic_lr,
        cfg.weight_decay,
        cfg.adam_beta1,
    )
    return state.replace(critic_params=params, critic_opt_state=opt_state), loss, priority


def _update_actor_and_targets(state: State, obs: jax.Array) -> State:
    (loss, actor_stats), grads = jax.value_and_grad(actor_loss, has_aux=True)(
        state.actor_params, state, obs
    )
    params, opt_state = common.adam_step(
        state.actor_params,
        grads,
        state.actor_opt_state,
        state.config.actor_lr,
        state.config.weight_decay,
        state.config.adam_beta1,
    )
    state = state.replace(
        actor_params=params, actor_opt_state=opt_state, actor_stats=actor_stats, actor_loss=loss
    )
    if state.config.crossq or state.config.target_every > 0:  # none, or hard copies
        return state
    tau = state.config.tau
    return _targets_updated(
        state.replace(
            target_actor_params=polyak_update(state.target_actor_params, params, tau),
            target_critic_params=polyak_update(
                state.target_critic_params, state.critic_params, tau
            ),
        )
    )


def _targets_updated(state: State) -> State:
    """What follows every target update: the value clip takes the range seen so far."""
    if state.value_range is None:
        return state
    seen = state.value_range
    return state.replace(value_range=seen.at[:2].set(seen[2:]))


def _copy_targets(state: State) -> State:
    """target_every > 0: the targets become copies of actor and critics."""
    return _targets_updated(
        state.replace(
            target_actor_params=common.copy(state.actor_params),
            target_critic_params=common.copy(state.critic_params),
        )
    )


def update(state: State, batch: Transition, key: jax.Array) -> tuple[State, dict[str, jax.Array]]:
    """With SALE first one encoder update; then one critic update; every `policy_freq`-th
    call also the actor and (Polyak) targets (no targets with crossq); with target_every
    > 0 hard target copies every target_every-th call; with SALE the fixed encoders swap
    every encoder_every-th call. batch holds raw observations (normalised here with the
    state's statistics). With LAP the metrics carry the rows' new priorities
    (`replay.PRIORITY_KEY`, [B])."""
    cfg = state.config
    state = state.replace(
        reward_watch=exploration.observe(state.reward_watch, batch.reward, state.step)
    )
    batch = common.normalize_batch(state, batch)
    if state.encoders is not None:
        obs, next_obs = common.views(cfg, batch.obs)[0], common.views(cfg, batch.next_obs)[0]
        encoders = sale.update(state.encoders, obs, batch.action, next_obs, cfg.encoder_lr)
        state = state.replace(encoders=encoders)
    state, loss, priority = _update_critic(state, batch, key)
    state = state.replace(step=state.step + 1)
    state = jax.lax.cond(
        state.step % cfg.policy_freq == 0,
        _update_actor_and_targets,
        lambda s, _: s,
        state,
        batch.obs,
    )
    if cfg.target_every > 0:
        state = jax.lax.cond(state.step % cfg.target_every == 0, _copy_targets, lambda s: s, state)
    metrics = {
        "loss/critic": loss,
        "loss/actor": state.actor_loss,
        **exploration.metrics(state.reward_watch),
    }
    if state.encoders is not None:
        now = state.step % cfg.encoder_every == 0
        state = state.replace(encoders=sale.swap(state.encoders, now))
        metrics["loss/encoder"] = state.encoders.loss
    return state, common.with_priority(metrics, priority)
