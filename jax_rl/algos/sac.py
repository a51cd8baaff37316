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

Network families (`jax_rl.networks.body`): `actor_network` / `critic_network` simba
puts SimBa's residual blocks in place of the MLP (the `simba` preset carries SimBa's
published settings). `crossq` is CrossQ (Bhatt et al., ICLR 2024): BatchRenorm
networks and no target critics; the critics' loss runs (s, a) and (s', a') through
the critics in one training-mode pass, so both halves are normalised by the same
batch statistics, and the target is that pass's second half without gradient:
    a' ~ pi(.|s') (running statistics),  [Q(s, a) | Q(s', a')] = Q([s | s'], [a | a'])
    y = r + gamma * d * (min_i sg(Q_i(s', a')) - alpha * log pi(a'|s'))
The actor's loss reads the critics with their running statistics while the actor
runs in training mode; `policy_freq` 3 delays actor and temperature as published.

SALE and LAP (TD7's parts, `--preset sac-sale`; no published recipe combines them with
SAC): `representation = "sale"` (`jax_rl.algos.sale`) trains the encoders first in
each update; actor and critics read the fixed encoders, the target critics the fixed
target encoders (the next action comes from the actor on the fixed encoders' z_s(s'));
`replay = "lap"` makes the critics' loss Huber and the update return the rows' priorities
(`common.td_loss`).
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
    EnsembleCritic,
    GaussianPolicy,
    Renorm,
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
    hold_exploration: bool = exploration.hold_field()
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
    scale_rewards: bool = common.scale_rewards_field()
    matmul_dtype: str = common.field(
        "float32", "dtype of the matrix products: float32 or bf16", static=True
    )
    actor_obs_size: int = common.field(
        0, "features of the observation the actor sees (0: all)", static=True, flag=False
    )
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
    replay: str = common.replay_field()
    lap_alpha: float = common.lap_alpha_field()

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
        common.check_crossq_targets(self)


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
    renorm: Renorm | None = common.renorm(config, train)
    policy = GaussianPolicy(
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
    return policy, critic


def _actor_variables(state: State) -> dict:
    return common.variables(state.actor_params, state.actor_stats)


def _critic_variables(state: State) -> dict:
    return common.variables(state.critic_params, state.critic_stats)


def _atoms(config: Config) -> jax.Array:
    return categorical.support(config.v_min, config.v_max, config.num_atoms)


def td_target(state: State, batch: Transition, key: jax.Array) -> jax.Array:
    """The soft TD target with clipped double Q and the entropy bonus: y [B], or for a
    categorical critic the projected target distribution [B, K]. batch is normalised."""
    cfg = state.config
    actor, critic = _networks(cfg, state.action_size)
    fixed, fixed_target = sale.copies(state.encoders)
    actor_obs, critic_obs = common.views(cfg, batch.next_obs)
    mean, log_std = actor.apply(_actor_variables(state), sale.actor_input(fixed, actor_obs)[0])
    next_action, next_log_prob = tanh_gaussian_sample(mean, log_std, key)
    _, target_zs = sale.actor_input(fixed_target, actor_obs)
    critic_in = sale.critic_input(fixed_target, critic_obs, next_action, target_zs)
    next_out = critic.apply(state.target_critic_params, critic_in, next_action)
    entropy_term = jnp.exp(state.log_alpha) * next_log_prob
    discount = cfg.discount * batch.discount
    if cfg.critic == "categorical":
        return categorical.target_distribution(
            next_out, _atoms(cfg), batch.reward, discount, shift=entropy_term
        )
    return batch.reward + discount * (next_out.min(axis=0) - entropy_term)


def critic_loss(
    critic_params: Any, state: State, batch: Transition, target: jax.Array
) -> tuple[jax.Array, jax.Array | None]:
    """sum over critics of 0.5 mean_B (Q_i(s, a) - y)^2, target y [B] (LAP: of the Huber
    loss, `common.td_loss`); for a categorical critic their cross-entropies to the target
    distribution [B, K]. target is a constant. Also returns the rows' new priorities [B]
    with LAP, else None."""
    cfg = state.config
    _, critic = _networks(cfg, state.action_size)
    critic_in = sale.critic_view(sale.copies(state.encoders)[0], cfg, batch.obs, batch.action)
    out = critic.apply(critic_params, critic_in, batch.action)  # [E, B] or [E, B, K]
    if cfg.critic == "categorical":
        return categorical.cross_entropy(out, target), None
    return common.td_loss(out, target, cfg, scale=0.5)


def crossq_critic_loss(
    critic_params: Any, state: State, batch: Transition, key: jax.Array
) -> tuple[jax.Array, tuple[Any, jax.Array | None]]:
    """CrossQ's: sum over critics of 0.5 mean_B (Q_i(s, a) - y)^2, where Q(s, a) and
    Q(s', a') [E, B] are the halves of one training-mode pass over the 2B rows
    [s | s'], [a | a'] and y [B] takes the second half without gradient (LAP: the Huber
    loss). Returns the loss and (the critics' running statistics after the pass, the
    rows' new priorities with LAP or None). batch is normalised."""
    cfg = state.config
    actor, _ = _networks(cfg, state.action_size)
    _, critic = _networks(cfg, state.action_size, train=True)
    next_actor_obs, next_critic_obs = common.views(cfg, batch.next_obs)
    mean, log_std = actor.apply(_actor_variables(state), next_actor_obs)
    next_action, next_log_prob = tanh_gaussian_sample(mean, log_std, key)
    _, critic_obs = common.views(cfg, batch.obs)
    joint_obs = jnp.concatenate([critic_obs, next_critic_obs])  # [2B, O]
    joint_action = jnp.concatenate([batch.action, next_action])  # [2B, A]
    out, critic_stats = common.apply_train(
        critic, critic_params, state.critic_stats, joint_obs, joint_action
    )
    q, next_q = jnp.split(out, 2, axis=1)  # [E, B] each
    soft_next = jax.lax.stop_gradient(next_q).min(axis=0) - jnp.exp(state.log_alpha) * next_log_prob
    target = batch.reward + cfg.discount * batch.discount * soft_next
    loss, priority = common.td_loss(q, target, cfg, scale=0.5)
    return loss, (critic_stats, priority)


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
    out = critic.apply(_critic_variables(state), critic_in, action)
    if cfg.critic == "categorical":
        out = categorical.mean_value(out, _atoms(cfg))
    q = out.min(axis=0)
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
    actor_key, critic_key, encoder_key = jax.random.split(key, 3)
    obs = jnp.zeros((1, obs_size), jnp.float32)
    action = jnp.zeros((1, action_size), jnp.float32)
    actor_obs, critic_obs = common.views(config, obs)
    encoders = sale.init(encoder_key, actor_obs.shape[-1], action_size, config)
    fixed, _ = sale.copies(encoders)
    actor_in, zs = sale.actor_input(fixed, actor_obs)
    critic_in = sale.critic_input(fixed, critic_obs, action, zs)
    actor_params, actor_stats = common.split_variables(actor.init(actor_key, actor_in))
    critic_params, critic_stats = common.split_variables(critic.init(critic_key, critic_in, action))
    log_alpha = jnp.log(jnp.float32(config.init_alpha))
    return State(
        actor_params=actor_params,
        critic_params=critic_params,
        target_critic_params=None if config.crossq else common.copy(critic_params),
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
    episode_draw: jax.Array | None = None,
) -> jax.Array:
    """obs [B, O] (raw) -> action [B, A]: tanh(mean) if deterministic, else a sample
    (its standard-normal draw from `key`, or `noise` [B, A] where given).
    `episode_draw` (a per-environment draw some learners explore with) is unused."""
    actor, _ = _networks(state.config, state.action_size)
    actor_obs, _ = common.views(state.config, normalization.normalize(state.obs_stats, obs))
    fixed, _ = sale.copies(state.encoders)
    mean, log_std = actor.apply(_actor_variables(state), sale.actor_input(fixed, actor_obs)[0])
    if deterministic:
        return squash(mean)
    action, _ = tanh_gaussian_sample(mean, log_std, key, noise)
    return action


observe = common.observe


ACTOR_METRICS = ("loss/actor", "loss/alpha", "dual/alpha", "policy/entropy")


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
    params, opt_state = common.adam_step(
        state.critic_params,
        grads,
        state.critic_opt_state,
        cfg.critic_lr,
        cfg.weight_decay,
        cfg.adam_beta1,
    )
    return state.replace(critic_params=params, critic_opt_state=opt_state), loss, priority


def _update_actor(
    state: State, obs: jax.Array, key: jax.Array
) -> tuple[State, jax.Array, jax.Array]:
    (loss, (log_prob, actor_stats)), grads = jax.value_and_grad(actor_loss, has_aux=True)(
        state.actor_params, state, obs, key
    )
    params, opt_state = common.adam_step(
        state.actor_params,
        grads,
        state.actor_opt_state,
        state.config.actor_lr,
        state.config.weight_decay,
        state.config.adam_beta1,
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
    cfg = state.config
    state = state.replace(
        reward_watch=exploration.observe(state.reward_watch, batch.reward, state.step)
    )
    batch = common.normalize_batch(state, batch)
    critic_key, actor_key = jax.random.split(key)
    if state.encoders is not None:
        obs, next_obs = common.views(cfg, batch.obs)[0], common.views(cfg, batch.next_obs)[0]
        encoders = sale.update(state.encoders, obs, batch.action, next_obs, cfg.encoder_lr)
        state = state.replace(encoders=encoders)
    state, loss_critic, priority = _update_critic(state, batch, critic_key)
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
    if not state.config.crossq:
        state = state.replace(
            target_critic_params=polyak_update(
                state.target_critic_params, state.critic_params, state.config.tau
            )
        )
    metrics = {
        "loss/critic": loss_critic,
        **actor_metrics,
        **exploration.metrics(state.reward_watch),
    }
    if state.encoders is not None:
        now = state.step % cfg.encoder_every == 0
        state = state.replace(encoders=sale.swap(state.encoders, now))
        metrics["loss/encoder"] = state.encoders.loss
    return state, common.with_priority(metrics, priority)
