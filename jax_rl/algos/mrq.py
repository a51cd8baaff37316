"""MR.Q's representation (Fujimoto et al., ICLR 2025, "Towards General-Purpose Model-Free
Reinforcement Learning"): state and state-action embeddings trained through a latent model
over short sub-trajectories; the learner's actor reads z_s, its critics z_sa.

Encoders (B batch, H horizon, Z = embedding_size, K = num_bins; LN a LayerNorm without
learned scale or shift, each hidden layer pre-activation normalised):
    z_s  = ELU(LN(f(s)))          f: s -> h (LN, ELU) -> h (LN, ELU) -> Z
    z_a  = ELU(W_a a + b_a)       [A] -> [action_embedding_size]
    z_sa = g([z_s, z_a])          g: -> h (LN, ELU) -> h (LN, ELU) -> Z
    (d, z', r_logits) = m(z_sa)   m: one linear layer Z -> 1 + Z + K

Latent model loss over a sub-trajectory (s_0, a_0, r_0, d_0, s'_0), ..., (..., s'_{H-1}),
unrolled from the encoded start: z_0 = z_s(s_0), (d_i, z_{i+1}, r_i) = m(g([z_i, z_a(a_i)])),
with w_i the window's mask (1 while step i belongs to the start's episode, `replay.Window`):
    L_dyn  = sum_i mean_{B, Z} w_i (z_{i+1} - sg(z_s_fixed(s'_i)))^2
    L_rew  = sum_i mean_B w_i CE(two_hot(r_i), softmax(r_logits_i))
    L_done = sum_i mean_B w_i (d_i - (1 - d_mask_i))^2
    L_enc  = dynamics_weight L_dyn + reward_weight L_rew + done_weight L_done

Two-hot: K bins b_k = symexp(linspace(-reward_bound, reward_bound, K)), symexp(x) =
sign(x) (e^|x| - 1); r (clipped to [b_0, b_{K-1}]) puts weight 1 - t on the bin b_k below
it and t = (r - b_k) / (b_{k+1} - b_k) on the one above, so that sum_k p_k b_k = r inverts
it exactly (`two_hot_inverse` reads a distribution back the same way).

Values: the critics learn Q / scale, scale the running mean |r| over every observed
transition; with the scales held between swaps (scale for the current value, target_scale
for the target networks' one), the critics' one-step view of a window is the
value_horizon-step return, cut at an episode's end (`value_batch`):
    y = (sum_{k<m} gamma^k r_k + gamma^m d_{m-1} target_scale Q_targ(s'_{m-1}, a')) / scale

Copies and schedule: `params` steps once per update (AdamW, encoder_lr and
encoder_weight_decay), at the start of the update; every `encoder_every` updates, before that
step: fixed_target <- fixed, fixed <- params and target_scale <- scale, scale <- mean |r|
(`swap`). The actor and critics read `fixed`, the TD targets `fixed_target` (the paper's
encoder and target encoder), and the dynamics loss's targets `fixed` (its target).

Ours against the paper: the published code trains the encoder in bursts of encoder_every
steps at each target copy (all on the buffer as it was at the copy); here it takes one step
per update between copies, so at any update it has had one burst fewer, on the same data.
A window that an episode's end (terminal or time limit) or the write position cuts short is
masked past it (the paper never samples windows that cross a time limit), and the done
loss is always on (the paper's only once the buffer has held a terminal).

DR.Q's options (Lyu, Lin, Fujimoto et al., ICML 2026, "Debiased Model-based
Representations for Sample-efficient Continuous Control"; `--preset drq`), each off by
default. An InfoNCE term (infonce_weight > 0, temperature tau = infonce_temperature) makes
the predicted next embedding pick its own target out of the batch, the other rows being
the negatives (n(x) = x / max(|x|_2, 1e-12); the rows masked out stay negatives, as in
DR.Q's code):
    l_i[b, c] = n(z_{i+1, b}) . sg(n(z_s_fixed(s'_{i, c}))) / tau          [B, B]
    L_nce = sum_i mean_b w_ib (-log softmax_c(l_i[b, :])_b),  L_enc += infonce_weight L_nce
with each row's term masked by its own w_ib: DR.Q's code multiplies the [B] losses by a
[B, 1] mask, which broadcasts to [B, B] and weighs mean_b CE_b by the fraction of rows
unmasked instead. Without value scaling (value_scaling false) the targets are in raw
reward units: y = sum_{k<m} gamma^k r_k + gamma^m d_{m-1} Q_targ(s'_{m-1}, a') (the
running mean |r| is still kept, and reported, but read by nothing).
"""

from __future__ import annotations

import math
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jax_rl.algos import common
from jax_rl.core import replay
from jax_rl.core.replay import Window
from jax_rl.core.transition import Transition

LAYER_NORM_EPSILON = 1e-5  # PyTorch's F.layer_norm, as the paper's code has it
SCALE_EPSILON = 1e-8


class Params(flax.struct.PyTreeNode):
    """One copy of MR.Q's encoders and latent model: each field a list of layers
    {"kernel", "bias"} (`state` f, `action` the one layer of z_a, `state_action` g,
    `model` the one layer m)."""

    state: Any
    action: Any
    state_action: Any
    model: Any


class Model(flax.struct.PyTreeNode):
    """MR.Q's sub-state of a learner: the three copies of `Params`, the trained copy's Adam
    state, the reward scales and the latest losses."""

    params: Params
    fixed: Params
    fixed_target: Params
    opt_state: Any
    abs_reward_mean: jax.Array  # running mean |r| over every transition observed
    observed: jax.Array  # the transitions it is the mean of (float32: exact to 2^24)
    scale: jax.Array  # the mean |r| at the latest swap (1 before the first)
    target_scale: jax.Array  # the scale before it (0 before the first swap)
    losses: jax.Array  # [dynamics, reward, done] of the latest encoder step


# --- Config fields (static: a traced field would add a leaf to every learner's state) ----


def action_embedding_size_field() -> Any:
    return common.field(256, "size of MR.Q's action embedding z_a", static=True)


def encoder_horizon_field() -> Any:
    return common.field(5, "steps MR.Q's latent model unrolls over", static=True)


def value_horizon_field() -> Any:
    return common.field(3, "steps of reward in MR.Q's value targets (multi-step)", static=True)


def num_bins_field() -> Any:
    return common.field(65, "bins of MR.Q's two-hot reward prediction", static=True)


def reward_bound_field() -> Any:
    return common.field(10.0, "MR.Q's reward bins span symexp of [-bound, bound]", static=True)


def dynamics_weight_field() -> Any:
    return common.field(1.0, "weight of MR.Q's latent dynamics loss", static=True)


def reward_weight_field() -> Any:
    return common.field(0.1, "weight of MR.Q's reward loss", static=True)


def done_weight_field() -> Any:
    return common.field(0.1, "weight of MR.Q's termination loss", static=True)


def encoder_weight_decay_field() -> Any:
    return common.field(0.0, "AdamW weight decay of the MR.Q encoders (MR.Q: 1e-4)", static=True)


def infonce_weight_field() -> Any:
    # Static as the weights above, and more: 0 leaves the term out of the program.
    return common.field(
        0.0, "weight of DR.Q's InfoNCE loss on the latent model (0: off, MR.Q)", static=True
    )


def infonce_temperature_field() -> Any:
    return common.field(0.1, "temperature of DR.Q's InfoNCE logits", static=True)


def value_scaling_field() -> Any:
    return common.field(
        True, "MR.Q's values in units of the mean |r| (false: raw rewards, DR.Q)", static=True
    )


def check(config: Any) -> None:
    """Raise ValueError for a bad MR.Q field, or a recipe MR.Q cannot train with."""
    name = type(config).__module__.rsplit(".", 1)[-1].upper()
    common.check_fields(
        config,
        positive=("reward_bound", "infonce_temperature"),
        non_negative=(
            "dynamics_weight",
            "reward_weight",
            "done_weight",
            "encoder_weight_decay",
            "infonce_weight",
        ),
        positive_ints=("action_embedding_size", "encoder_horizon", "value_horizon"),
    )
    bins = config.num_bins
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 2:
        raise ValueError(f"{name} num_bins must be an integer >= 2, got {bins!r}")
    if not isinstance(config.value_scaling, bool):
        raise ValueError(
            f"{name} value_scaling must be true or false, got {config.value_scaling!r}"
        )
    if config.representation != "mrq":
        return
    recipe = "crossq" if getattr(config, "crossq", False) else config.critic
    if recipe != "scalar":
        raise ValueError(
            f"{name} representation mrq trains with the scalar critic (its values are "
            f"scaled returns), got critic {recipe}"
        )
    if getattr(config, "normalize_obs", False) or getattr(config, "scale_rewards", False):
        raise ValueError(
            f"{name} representation mrq keeps its own reward scale and reads observations "
            "raw: drop normalize_obs and scale_rewards"
        )


def horizon(config: Any) -> int:
    """Rows per sub-trajectory the replay hands this learner (1: plain transitions)."""
    if config.representation != "mrq":
        return 1
    return max(int(config.encoder_horizon), int(config.value_horizon))


# --- Two-hot rewards -------------------------------------------------------------------


def symlog(x: jax.Array) -> jax.Array:
    return jnp.sign(x) * jnp.log1p(jnp.abs(x))


def symexp(x: jax.Array) -> jax.Array:
    return jnp.sign(x) * jnp.expm1(jnp.abs(x))


def bins(num_bins: int, bound: float) -> jax.Array:
    """[K] bin values, evenly spaced in symlog space over [-bound, bound]."""
    return symexp(jnp.linspace(-bound, bound, num_bins))


def two_hot(x: jax.Array, values: jax.Array) -> jax.Array:
    """x [...] -> [..., K]: weights on the two bins around x (clipped into their range)
    whose mean over `values` [K] is x."""
    x = jnp.clip(x, values[0], values[-1])
    below = jnp.clip(jnp.searchsorted(values, x, side="right") - 1, 0, values.shape[0] - 2)
    low, high = values[below], values[below + 1]
    t = (x - low) / (high - low)
    k = values.shape[0]
    return (
        jax.nn.one_hot(below, k) * (1 - t)[..., None] + jax.nn.one_hot(below + 1, k) * t[..., None]
    )


def two_hot_inverse(logits: jax.Array, values: jax.Array) -> jax.Array:
    """[..., K] logits -> [...]: the mean of `values` under their softmax."""
    return (jax.nn.softmax(logits, axis=-1) * values).sum(axis=-1)


# --- The encoders ------------------------------------------------------------------------


def _layer(key: jax.Array, fan_in: int, fan_out: int) -> dict:
    """Xavier-uniform kernel with ReLU's gain, zero bias (the paper's initialisation)."""
    bound = math.sqrt(2.0) * math.sqrt(6.0 / (fan_in + fan_out))
    kernel = jax.random.uniform(key, (fan_in, fan_out), minval=-bound, maxval=bound)
    return {"kernel": kernel, "bias": jnp.zeros((fan_out,), jnp.float32)}


def _layers(key: jax.Array, sizes: list[int]) -> list[dict]:
    keys = jax.random.split(key, len(sizes) - 1)
    return [_layer(k, a, b) for k, a, b in zip(keys, sizes[:-1], sizes[1:], strict=True)]


def layer_norm(x: jax.Array) -> jax.Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + LAYER_NORM_EPSILON)


def _dense(layer: dict, x: jax.Array) -> jax.Array:
    return x @ layer["kernel"] + layer["bias"]


def _mlp(layers: list[dict], x: jax.Array) -> jax.Array:
    """LayerNorm then ELU after every layer but the last."""
    for layer in layers[:-1]:
        x = jax.nn.elu(layer_norm(_dense(layer, x)))
    return _dense(layers[-1], x)


def init_params(
    key: jax.Array, state_size: int, action_size: int, hidden: tuple[int, ...], config: Any
) -> Params:
    """Fresh encoders and latent model for states [state_size] and actions [action_size]."""
    dim, action_dim = int(config.embedding_size), int(config.action_embedding_size)
    k_state, k_action, k_state_action, k_model = jax.random.split(key, 4)
    return Params(
        state=_layers(k_state, [state_size, *hidden, dim]),
        action=_layers(k_action, [action_size, action_dim]),
        state_action=_layers(k_state_action, [dim + action_dim, *hidden, dim]),
        model=_layers(k_model, [dim, 1 + dim + int(config.num_bins)]),
    )


def state_embedding(params: Params, obs: jax.Array) -> jax.Array:
    """z_s: obs [..., S] -> [..., Z]."""
    return jax.nn.elu(layer_norm(_mlp(params.state, obs)))


def state_action_embedding(params: Params, zs: jax.Array, action: jax.Array) -> jax.Array:
    """z_sa: [..., Z], [..., A] -> [..., Z]."""
    za = jax.nn.elu(_dense(params.action[0], action))
    return _mlp(params.state_action, jnp.concatenate([zs, za], axis=-1))


def predict(params: Params, zsa: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The latent model's (done [...], next z_s [..., Z], reward logits [..., K])."""
    out = _dense(params.model[0], zsa)
    dim = zsa.shape[-1]
    return out[..., 0], out[..., 1 : 1 + dim], out[..., 1 + dim :]


def infonce(prediction: jax.Array, target: jax.Array, temperature: Any) -> jax.Array:
    """DR.Q's InfoNCE per row: prediction, target [B, Z] -> [B], the cross-entropy of row
    b's logits n(prediction_b) . n(target_c) / temperature over the batch c against c = b
    (n: L2-normalised, as torch's F.normalize). One direction only: each prediction picks
    its target, not each target its prediction."""

    def unit(x: jax.Array) -> jax.Array:
        return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-12)

    logits = unit(prediction) @ unit(target).T / temperature  # [B, B]
    return -jnp.diagonal(jax.nn.log_softmax(logits, axis=-1))


def infonce_on(config: Any) -> bool:
    """Whether the encoders train with DR.Q's InfoNCE term (a static choice: off, the
    program is MR.Q's)."""
    return config.infonce_weight > 0


class Losses(flax.struct.PyTreeNode):
    dynamics: jax.Array
    reward: jax.Array
    done: jax.Array
    infonce: jax.Array | None = None  # only with DR.Q's term on


def losses(params: Params, target: Params, window: Window, config: Any) -> Losses:
    """The three latent-model losses (four with DR.Q's InfoNCE), each summed over the first
    encoder_horizon steps of `window` ([B, H, ...], observations as the encoders see them);
    the dynamics (and InfoNCE) targets come from the `target` copy."""
    steps = int(config.encoder_horizon)
    window = jax.tree_util.tree_map(lambda x: x[:, :steps], window)
    next_zs = jax.lax.stop_gradient(state_embedding(target, window.next_obs))  # [B, H, Z]
    values = bins(int(config.num_bins), config.reward_bound)
    time_major = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731

    def step(zs: jax.Array, inputs: tuple) -> tuple[jax.Array, jax.Array]:
        action, reward, discount, mask, target_zs = inputs
        done, zs, logits = predict(params, state_action_embedding(params, zs, action))
        dynamics = (mask[:, None] * (zs - target_zs) ** 2).mean()
        cross = -(two_hot(reward, values) * jax.nn.log_softmax(logits)).sum(axis=-1)
        done_error = (done - (1.0 - discount)) ** 2
        parts = [dynamics, (mask * cross).mean(), (mask * done_error).mean()]
        if infonce_on(config):  # each row's term masked by its own w_ib
            parts.append((mask * infonce(zs, target_zs, config.infonce_temperature)).mean())
        return zs, jnp.stack(parts)

    inputs = (window.action, window.reward, window.discount, window.mask, next_zs)
    zs = state_embedding(params, window.obs[:, 0])
    _, per_step = jax.lax.scan(step, zs, jax.tree_util.tree_map(time_major, inputs))
    total = per_step.sum(axis=0)
    nce = total[3] if infonce_on(config) else None
    return Losses(dynamics=total[0], reward=total[1], done=total[2], infonce=nce)


def loss(params: Params, target: Params, window: Window, config: Any) -> tuple[jax.Array, Any]:
    """L_enc (weighted sum of `losses`) and its parts [3] ([4] with DR.Q's InfoNCE)."""
    parts = losses(params, target, window, config)
    value = (
        config.dynamics_weight * parts.dynamics
        + config.reward_weight * parts.reward
        + config.done_weight * parts.done
    )
    stacked = [parts.dynamics, parts.reward, parts.done]
    if parts.infonce is not None:
        value = value + config.infonce_weight * parts.infonce
        stacked.append(parts.infonce)
    return value, jnp.stack(stacked)


# --- The learner's sub-state ----------------------------------------------------------


def init(key: jax.Array, state_size: int, action_size: int, config: Any) -> Model:
    params = init_params(key, state_size, action_size, tuple(config.encoder_hidden_sizes), config)
    return Model(
        params=params,
        fixed=common.copy(params),
        fixed_target=common.copy(params),
        opt_state=common.adam_init(params),
        abs_reward_mean=jnp.float32(0.0),
        observed=jnp.float32(0.0),
        scale=jnp.float32(1.0),
        target_scale=jnp.float32(0.0),
        losses=jnp.zeros(4 if infonce_on(config) else 3, jnp.float32),
    )


def observe(model: Model, reward: jax.Array) -> Model:
    """The running mean |r| with one collection step's rewards [E] merged in."""
    count = model.observed + reward.size
    mean = (
        model.abs_reward_mean
        + (jnp.abs(reward).sum() - reward.size * model.abs_reward_mean) / count
    )
    return model.replace(abs_reward_mean=mean, observed=count)


def swap(model: Model, now: jax.Array) -> Model:
    """Where `now`: fixed_target <- fixed, fixed <- params, target_scale <- scale,
    scale <- mean |r| (else unchanged)."""
    pick = lambda new, old: jax.tree_util.tree_map(  # noqa: E731
        lambda n, o: jnp.where(now, n, o), new, old
    )
    scale = jnp.maximum(model.abs_reward_mean, SCALE_EPSILON)
    return model.replace(
        fixed_target=pick(model.fixed, model.fixed_target),
        fixed=pick(model.params, model.fixed),
        target_scale=jnp.where(now, model.scale, model.target_scale),
        scale=jnp.where(now, scale, model.scale),
    )


def train(model: Model, window: Window, config: Any) -> Model:
    """One AdamW step of the encoders on L_enc over `window`."""
    (_, parts), grads = jax.value_and_grad(loss, has_aux=True)(
        model.params, model.fixed, window, config
    )
    params, opt_state = common.adam_step(
        model.params, grads, model.opt_state, config.encoder_lr, config.encoder_weight_decay
    )
    return model.replace(params=params, opt_state=opt_state, losses=parts)


def value_batch(model: Model, window: Window, config: Any) -> Transition:
    """The critics' transitions [B] of a window [B, H]: from each start, the value_horizon-
    step return to the window's last step in the start's episode (m steps), in the
    n-step layout of `jax_rl.loops.nstep` (reward sum_{k<m} gamma^k r_k, discount
    gamma^(m-1) d_{m-1}, next_obs s'_{m-1}), rewards divided by `scale` and the discount
    times target_scale / scale (what the learners' TD target then makes of them: the
    module docstring's y); without value_scaling (DR.Q) the return and discount as they
    are, in raw reward units."""
    n = min(int(config.value_horizon), window.mask.shape[1])
    cut = lambda x: x[:, :n]  # noqa: E731
    short = window.replace(
        reward=cut(window.reward),
        discount=cut(window.discount),
        next_obs=cut(window.next_obs),
        mask=cut(window.mask),
    )
    out = replay.window_transition(short, config.discount)
    if config.value_scaling:
        out = out.replace(
            reward=out.reward / model.scale,
            discount=out.discount * model.target_scale / model.scale,
        )
    return out


def as_window(batch: Any) -> Window:
    """A window as it is; plain transitions [B] as windows of one step."""
    if isinstance(batch, Window):
        return batch
    return Window(
        **{name: getattr(batch, name)[:, None] for name in Transition.__dataclass_fields__},
        mask=jnp.ones(batch.reward.shape + (1,), jnp.float32),
    )


def learner_update(state: Any, batch: Any) -> tuple[Any, Transition]:
    """A learner's state with its MR.Q model swapped (every encoder_every-th update) and
    stepped once on `batch` (a window, observations as the actor sees them), and the
    critics' transitions of that window (`value_batch`)."""
    cfg = state.config
    window = as_window(batch)
    views = lambda obs: common.views(cfg, obs)[0]  # noqa: E731
    seen = window.replace(obs=views(window.obs), next_obs=views(window.next_obs))
    model = swap(state.encoders, state.step % cfg.encoder_every == 0)
    model = train(model, seen, cfg)
    return state.replace(encoders=model), value_batch(model, window, cfg)


def metrics(model: Model) -> dict[str, jax.Array]:
    dynamics, reward, done, *infonce = model.losses  # a fourth with DR.Q's InfoNCE
    out = {
        "loss/encoder_dynamics": dynamics,
        "loss/encoder_reward": reward,
        "loss/encoder_done": done,
        "mrq/reward_scale": model.scale,
    }
    if infonce:
        out["loss/encoder_infonce"] = infonce[0]
    return out
