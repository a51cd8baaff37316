"""SALE: state and state-action embeddings learned from the dynamics (Fujimoto et al., 2023,
"For SALE: State-Action Representation Learning for Deep Reinforcement Learning", TD7).

Two encoders, each an ELU MLP (B batch, D embedding size):
    z_s  = AvgL1Norm(f(s))                 f: s -> hidden (ELU) ... -> D
    z_sa = g([z_s, a])                     g: [z_s, a] -> hidden (ELU) ... -> D
    AvgL1Norm(x) = x / max(mean_i |x_i|, 1e-8)          (over the D features of a row)
    L_enc = mean_{B, D} (g([f(s), a]) - sg(AvgL1Norm(f(s'))))^2
    (f(s) inside g is normalised too: z_s above.)

The learner's actor sees [s, z_s] and its critics [s, z_sa, z_s] with the action a. Three
copies of the encoders live in the learner's state (`Encoders`): the trained one (`params`,
one Adam step per update, first in the update, on the update's batch), the `fixed` one that
actor and critics read, and the `fixed_target` one the TD targets read; every
`encoder_every` updates fixed_target <- fixed and fixed <- params (`swap`). Actor and critic
losses take the embeddings without gradient to the encoders (their parameters are not the
ones differentiated), but the actor's gradient flows through g into its action.

Ours against the paper: the embeddings join the networks' inputs (any network family takes
them); the published networks instead pass s (and a) through one layer with AvgL1Norm
before joining the embeddings, and use ELU in the critic.

This module is also the learners' one seam to their representation: `representation =
"mrq"` (MR.Q's encoders and latent model, `jax_rl.algos.mrq`) goes through the same
functions, which hand it on where the sub-state or parameters are MR.Q's; there the actor
sees z_s alone and the critics z_sa (with the action).
"""

from __future__ import annotations

import math
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jax_rl.algos import common, mrq

REPRESENTATIONS = ("none", "sale", "mrq")


class Encoders(flax.struct.PyTreeNode):
    """SALE's sub-state of a learner: three copies of the encoders' parameters (each
    {"state": [...layers], "state_action": [...layers]}, a layer {"kernel", "bias"}),
    the trained copy's Adam state and its latest loss."""

    params: Any
    fixed: Any
    fixed_target: Any
    opt_state: Any
    loss: jax.Array


# --- Config fields every learner that takes a representation shares -------------------


def representation_field() -> Any:
    return common.field(
        "none",
        "none, sale (TD7's learned state and state-action embeddings) or mrq (MR.Q's, "
        "trained through a latent model over sub-trajectories)",
        static=True,
    )


def encoder_hidden_sizes_field() -> Any:
    return common.field((256, 256), "hidden layer sizes of each SALE or MR.Q encoder", static=True)


def embedding_size_field() -> Any:
    return common.field(256, "size of SALE's or MR.Q's embeddings z_s and z_sa", static=True)


def encoder_lr_field() -> Any:
    return common.field(3e-4, "Adam learning rate of the SALE or MR.Q encoders")


def encoder_every_field() -> Any:
    return common.field(
        250,
        "updates between swaps of SALE's or MR.Q's fixed encoders",
        static=True,
    )


def check(config: Any) -> None:
    """Raise ValueError for an unknown representation or bad encoder sizes."""
    name = type(config).__module__.rsplit(".", 1)[-1].upper()
    if config.representation not in REPRESENTATIONS:
        choices = ", ".join(REPRESENTATIONS)
        raise ValueError(
            f"{name} representation must be one of {choices}, got {config.representation!r}"
        )
    size = config.embedding_size
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"{name} embedding_size must be a positive integer, got {size!r}")
    sizes = config.encoder_hidden_sizes
    if not sizes or not all(
        isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes
    ):
        raise ValueError(f"{name} encoder_hidden_sizes must be positive integers, got {sizes!r}")
    common.check_fields(config, positive=("encoder_lr",), positive_ints=("encoder_every",))
    mrq.check(config)


def horizon(config: Any) -> int:
    """Rows per sub-trajectory the learner's batches hold (1: plain transitions; MR.Q's
    windows otherwise, `replay.Window`)."""
    return mrq.horizon(config)


# --- The encoders ------------------------------------------------------------------------


def avg_l1_norm(x: jax.Array, epsilon: float = 1e-8) -> jax.Array:
    """x / max(mean |x|, epsilon) over the last axis."""
    return x / jnp.maximum(jnp.abs(x).mean(axis=-1, keepdims=True), epsilon)


def _init_mlp(key: jax.Array, sizes: list[int]) -> list[dict]:
    """Layers sizes[0] -> ... -> sizes[-1], PyTorch's default initialisation (kernel and
    bias uniform in +-1/sqrt(fan_in)), as the paper's code gets it."""
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        key, kernel_key, bias_key = jax.random.split(key, 3)
        bound = 1.0 / math.sqrt(fan_in)
        uniform = lambda k, shape: jax.random.uniform(k, shape, minval=-bound, maxval=bound)  # noqa: E731
        layers.append(
            {
                "kernel": uniform(kernel_key, (fan_in, fan_out)),
                "bias": uniform(bias_key, (fan_out,)),
            }
        )
    return layers


def _mlp(layers: list[dict], x: jax.Array) -> jax.Array:
    """ELU between layers, none after the last."""
    for i, layer in enumerate(layers):
        x = x @ layer["kernel"] + layer["bias"]
        if i < len(layers) - 1:
            x = jax.nn.elu(x)
    return x


def init_params(
    key: jax.Array, state_size: int, action_size: int, hidden: tuple[int, ...], dim: int
) -> dict:
    """Fresh encoder parameters for states [state_size] and actions [action_size]."""
    state_key, state_action_key = jax.random.split(key)
    return {
        "state": _init_mlp(state_key, [state_size, *hidden, dim]),
        "state_action": _init_mlp(state_action_key, [dim + action_size, *hidden, dim]),
    }


def state_embedding(params: dict, obs: jax.Array) -> jax.Array:
    """z_s = AvgL1Norm(f(s)): obs [..., S] -> [..., D]."""
    return avg_l1_norm(_mlp(params["state"], obs))


def state_action_embedding(params: dict, zs: jax.Array, action: jax.Array) -> jax.Array:
    """z_sa = g([z_s, a]): [..., D], [..., A] -> [..., D]."""
    return _mlp(params["state_action"], jnp.concatenate([zs, action], axis=-1))


def loss(params: dict, obs: jax.Array, action: jax.Array, next_obs: jax.Array) -> jax.Array:
    """mean_{B, D} (z_sa(s, a) - sg(z_s(s')))^2, the encoders' dynamics loss."""
    target = jax.lax.stop_gradient(state_embedding(params, next_obs))
    prediction = state_action_embedding(params, state_embedding(params, obs), action)
    return ((prediction - target) ** 2).mean()


def init(key: jax.Array, state_size: int, action_size: int, config: Any) -> Any:
    """The learner's SALE (or MR.Q) sub-state (None without a representation); the three
    copies start equal (distinct buffers: the loops donate the state)."""
    if config.representation == "mrq":
        return mrq.init(key, state_size, action_size, config)
    if config.representation != "sale":
        return None
    params = init_params(
        key, state_size, action_size, tuple(config.encoder_hidden_sizes), config.embedding_size
    )
    return Encoders(
        params=params,
        fixed=common.copy(params),
        fixed_target=common.copy(params),
        opt_state=common.adam_init(params),
        loss=jnp.float32(0.0),
    )


def update(
    encoders: Encoders, obs: jax.Array, action: jax.Array, next_obs: jax.Array, lr: jax.Array
) -> Encoders:
    """One Adam step on the dynamics loss of a batch (observations as the actor sees them)."""
    value, grads = jax.value_and_grad(loss)(encoders.params, obs, action, next_obs)
    params, opt_state = common.adam_step(encoders.params, grads, encoders.opt_state, lr)
    return encoders.replace(params=params, opt_state=opt_state, loss=value)


def learner_update(state: Any, batch: Any) -> tuple[Any, Any]:
    """A learner's `state` with its encoders stepped once on `batch` (normalised), as TD3
    and SAC do before their critics, and the transitions its critics and actor then learn
    from: `batch` itself (unchanged state without a representation), or with MR.Q its
    window's multi-step transitions (`mrq.learner_update`)."""
    if isinstance(state.encoders, mrq.Model):
        return mrq.learner_update(state, batch)
    if state.encoders is None:
        return state, batch
    cfg = state.config
    obs, next_obs = common.views(cfg, batch.obs)[0], common.views(cfg, batch.next_obs)[0]
    encoders = update(state.encoders, obs, batch.action, next_obs, cfg.encoder_lr)
    return state.replace(encoders=encoders), batch


def learner_observe(state: Any, transition: Any) -> Any:
    """After `common.observe`: MR.Q's running mean |r| takes the step's rewards [E]
    (unchanged otherwise)."""
    if not isinstance(state.encoders, mrq.Model):
        return state
    return state.replace(encoders=mrq.observe(state.encoders, transition.reward))


def learner_swap(state: Any, metrics: dict[str, jax.Array]) -> tuple[Any, dict[str, jax.Array]]:
    """After an update: the fixed encoders swap every encoder_every-th update, and the
    metrics gain the encoders' loss; unchanged without a representation."""
    if isinstance(state.encoders, mrq.Model):  # it swapped at the update's start
        return state, {**metrics, **mrq.metrics(state.encoders)}
    if state.encoders is None:
        return state, metrics
    now = state.step % state.config.encoder_every == 0
    state = state.replace(encoders=swap(state.encoders, now))
    return state, {**metrics, "loss/encoder": state.encoders.loss}


def swap(encoders: Encoders, now: jax.Array) -> Encoders:
    """Where `now`: fixed_target <- fixed, fixed <- params (else unchanged)."""
    pick = lambda new, old: jax.tree_util.tree_map(  # noqa: E731
        lambda n, o: jnp.where(now, n, o), new, old
    )
    return encoders.replace(
        fixed_target=pick(encoders.fixed, encoders.fixed_target),
        fixed=pick(encoders.params, encoders.fixed),
    )


# --- What the networks see ------------------------------------------------------------


def actor_input(params: Any, obs: jax.Array) -> tuple[jax.Array, jax.Array | None]:
    """([s, z_s], z_s) with encoder `params`; MR.Q's: (z_s, z_s); without (None): (s, None)."""
    if isinstance(params, mrq.Params):
        zs = mrq.state_embedding(params, obs)
        return zs, zs
    if params is None:
        return obs, None
    zs = state_embedding(params, obs)
    return jnp.concatenate([obs, zs], axis=-1), zs


def critic_input(params: Any, obs: jax.Array, action: jax.Array, zs: jax.Array | None) -> jax.Array:
    """[s, z_sa, z_s] (the critic appends a) with encoder `params` and z_s of the same
    rows; MR.Q's: z_sa; without (None): s. action [..., A] broadcasts against obs [..., O]."""
    if isinstance(params, mrq.Params):
        assert zs is not None
        zs = jnp.broadcast_to(zs, action.shape[:-1] + zs.shape[-1:])
        return mrq.state_action_embedding(params, zs, action)
    if params is None:
        return obs
    zsa = state_action_embedding(
        params, jnp.broadcast_to(zs, action.shape[:-1] + zs.shape[-1:]), action
    )
    obs = jnp.broadcast_to(obs, action.shape[:-1] + obs.shape[-1:])
    zs = jnp.broadcast_to(zs, zsa.shape)
    return jnp.concatenate([obs, zsa, zs], axis=-1)


def critic_view(params: Any, config: Any, obs: jax.Array, action: jax.Array) -> jax.Array:
    """What the critics see of observations obs [B, O] (normalised) with actions [B, A]:
    `critic_input` on the critics' view, z_s from the actor's (`common.views`)."""
    actor_obs, critic_obs = common.views(config, obs)
    _, zs = actor_input(params, actor_obs)
    return critic_input(params, critic_obs, action, zs)


def init_networks(
    key: jax.Array, actor: Any, critic: Any, obs_size: int, action_size: int, config: Any
) -> tuple[Any, Any, Any]:
    """The actor's and the critics' variables, built on zeros through this seam (their
    inputs read the encoders), and the encoders; `key` splits into the actor's, the
    critics' and the encoders' keys."""
    actor_key, critic_key, encoder_key = jax.random.split(key, 3)
    obs = jnp.zeros((1, obs_size), jnp.float32)
    action = jnp.zeros((1, action_size), jnp.float32)
    actor_obs, critic_obs = common.views(config, obs)
    encoders = init(encoder_key, actor_obs.shape[-1], action_size, config)
    fixed, _ = copies(encoders)
    actor_in, zs = actor_input(fixed, actor_obs)
    critic_in = critic_input(fixed, critic_obs, action, zs)
    return actor.init(actor_key, actor_in), critic.init(critic_key, critic_in, action), encoders


def copies(encoders: Any) -> tuple[Any, Any]:
    """(fixed, fixed_target) parameters, or (None, None) without a representation."""
    if encoders is None:
        return None, None
    return encoders.fixed, encoders.fixed_target
