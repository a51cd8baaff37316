"""Networks and the tanh-squashed Gaussian shared by the learners.

Shapes: B batch, O observation size, A action size, E ensemble members.

Every policy acts in [-1, 1]; the environment adapters rescale to the
environment's bounds. The same `squash`/`tanh_gaussian_sample` functions are
used when acting and when learning, so the critic sees the actions the agent
really takes (DESIGN.md section 7, pitfall 4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

INITS = ("pytorch", "lecun")
INPUT_LAYERS = ("relu", "layernorm")
# The dtype of the matrix products (parameters stay float32): "bf16" runs them in
# bfloat16, as mixed-precision training does on accelerators.
MATMUL_DTYPES = {"float32": None, "bf16": jnp.bfloat16}
LAYER_NORM_EPSILON = 1e-6  # flax.linen.LayerNorm's default


def dense(features: int, fan_in: int, layer_init: str, dtype: Any = None) -> nn.Dense:
    """A linear layer with one of two initialisations.

    "pytorch": kernel and bias uniform in +-1/sqrt(fan_in), as PyTorch's
    `nn.Linear` and so the reference TD3 code; "lecun": Flax's default, LeCun
    normal kernel and zero bias. On cartpole-swingup TD3 learned much faster
    with the first and SAC with the second (docs/results/README.md), so each
    learner's Config chooses. `dtype` is the computation's (None: float32); the
    parameters are float32 whatever it is.
    """
    if layer_init == "lecun":
        return nn.Dense(features, dtype=dtype)
    if layer_init != "pytorch":
        raise ValueError(f"layer_init must be one of {', '.join(INITS)}, got {layer_init!r}")
    bound = 1.0 / math.sqrt(fan_in)
    return nn.Dense(
        features,
        dtype=dtype,
        kernel_init=nn.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform"),
        bias_init=lambda key, shape, dtype=jnp.float32: jax.random.uniform(
            key, shape, dtype, -bound, bound
        ),
    )


class LayerNorm(nn.Module):
    """Layer normalisation over the last axis, with a learned scale and bias.

    The same function as `flax.linen.LayerNorm` (its defaults: epsilon 1e-6,
    variance as E[x^2] - E[x]^2), but the two means are matrix-vector
    products: XLA's CPU compiler fuses row reductions into the surrounding
    matmuls badly, and with `nn.LayerNorm` in MPO's critic one update took
    2.1x as long as with ReLU (26.9 against 12.7 ms at batch 256, 20 samples);
    written this way it takes 16.8 ms. (MPO's E-step, on N x B rows, now skips
    even that: `critic_many_actions`.)
    """

    epsilon: float = LAYER_NORM_EPSILON

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        features = x.shape[-1]
        scale = self.param("scale", nn.initializers.ones, (features,), jnp.float32)
        bias = self.param("bias", nn.initializers.zeros, (features,), jnp.float32)
        average = jnp.full((features, 1), 1.0 / features, x.dtype)
        mean = x @ average
        variance = jnp.maximum((x * x) @ average - mean * mean, 0.0)
        return (x - mean) * jax.lax.rsqrt(variance + self.epsilon) * scale + bias


class MLP(nn.Module):
    """ReLU hidden layers, then a linear output layer.

    input_layer "layernorm" makes the first hidden layer Linear -> LayerNorm ->
    tanh (the input block of Acme's LayerNormMLP, which its MPO and D4PG use):
    the first layer's output has zero mean and unit variance across its
    features whatever the scale of the observation, and stays in (-1, 1).
    """

    hidden_sizes: Sequence[int]
    output_size: int
    layer_init: str = "pytorch"
    input_layer: str = "relu"
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        if self.input_layer not in INPUT_LAYERS:
            choices = ", ".join(INPUT_LAYERS)
            raise ValueError(f"input_layer must be one of {choices}, got {self.input_layer!r}")
        dtype = MATMUL_DTYPES[self.matmul_dtype]
        for i, size in enumerate(self.hidden_sizes):
            x = dense(size, x.shape[-1], self.layer_init, dtype)(x)
            if i == 0 and self.input_layer == "layernorm":
                x = jnp.tanh(LayerNorm()(x))
            else:
                x = nn.relu(x)
        out = dense(self.output_size, x.shape[-1], self.layer_init, dtype)(x)
        return out.astype(jnp.float32)


class Critic(nn.Module):
    """Q(s, a): obs [B, O], action [B, A] -> [B]; with num_atoms K > 0 the logits [B, K]
    of a categorical value distribution instead (`jax_rl.algos.categorical`)."""

    hidden_sizes: Sequence[int]
    layer_init: str = "pytorch"
    input_layer: str = "relu"
    num_atoms: int = 0
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action], axis=-1)
        outputs = max(self.num_atoms, 1)
        out = MLP(self.hidden_sizes, outputs, self.layer_init, self.input_layer, self.matmul_dtype)(
            x
        )
        return out if self.num_atoms else out[..., 0]


def critic_many_actions(
    critic: Critic, params: Any, obs: jax.Array, actions: jax.Array
) -> jax.Array:
    """Q(s_b, a_nb) for N actions at each of B states: obs [B, O], actions [N, B, A] -> [N, B].

    The same values as `critic.apply(params, tiled obs [N, B, O], actions)`, up to
    float rounding, computed without the [N, B, H] passes that only depend on the
    state. The first layer is h = c_b + a W_a with c_b = s_b W_s + b computed once
    per state, and written as A broadcast multiply-adds so that XLA emits h and
    its activation in one pass over [N, B, H]. With a LayerNorm input layer the
    mean and variance of h over its H features have closed forms in per-state
    quantities:

        mean_j h_j = mean_j c_j + sum_k a_k mean_j W_kj
        mean_j h_j^2 = mean_j c_j^2 + 2 sum_k a_k mean_j c_j W_kj
                       + sum_kl a_k a_l mean_j W_kj W_lj

    so the layer's normalisation costs O(N B A^2), not three more passes over
    [N, B, H]. MPO's E-step scores N = 20 actions per state this way; with the
    LayerNorm input layer its host-loop step fell from 22.9 to 12.5 s per 1000
    steps (docs/results/README.md, "Speed of the returns configuration").
    """
    if not critic.hidden_sizes:  # a linear critic: nothing to save
        tiled = jnp.broadcast_to(obs, actions.shape[:-1] + obs.shape[-1:])
        q: jax.Array = critic.apply(params, tiled, actions)  # type: ignore[assignment]
        return q
    layers = params["params"]["MLP_0"]
    kernel, bias = layers["Dense_0"]["kernel"], layers["Dense_0"]["bias"]
    obs_size, action_size = obs.shape[-1], actions.shape[-1]
    w_obs, w_action = kernel[:obs_size], kernel[obs_size:]  # [O, H], [A, H]
    c = obs @ w_obs + bias  # [B, H]
    h = c[None] + sum(actions[..., k, None] * w_action[k] for k in range(action_size))
    if critic.input_layer == "layernorm":
        features = c.shape[-1]
        mean = c.mean(axis=-1) + actions @ w_action.mean(axis=-1)  # [N, B]
        cross = c @ w_action.T / features  # [B, A]
        gram = w_action @ w_action.T / features  # [A, A]
        square = (
            (c * c).mean(axis=-1)
            + 2.0 * (actions * cross).sum(axis=-1)
            + jnp.einsum("nbk,kl,nbl->nb", actions, gram, actions)
        )
        variance = jnp.maximum(square - mean * mean, 0.0)
        norm = layers["LayerNorm_0"]
        scale = jax.lax.rsqrt(variance + LAYER_NORM_EPSILON)[..., None] * norm["scale"]
        x = jnp.tanh((h - mean[..., None]) * scale + norm["bias"])
    else:
        x = nn.relu(h)
    num_hidden = len(critic.hidden_sizes)
    for i in range(1, num_hidden + 1):
        x = x @ layers[f"Dense_{i}"]["kernel"] + layers[f"Dense_{i}"]["bias"]
        if i < num_hidden:
            x = nn.relu(x)
    return x[..., 0]


class EnsembleCritic(nn.Module):
    """E independent critics evaluated as one vmapped network: -> [E, B].

    The members share no parameters (each has its own initialisation); the
    vmap turns their layers into batched matrix products, one XLA op per layer
    instead of E.
    """

    hidden_sizes: Sequence[int]
    num_members: int = 2
    layer_init: str = "pytorch"
    num_atoms: int = 0
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        ensemble = nn.vmap(
            Critic,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            in_axes=None,
            out_axes=0,
            axis_size=self.num_members,
        )
        member = ensemble(
            self.hidden_sizes,
            self.layer_init,
            num_atoms=self.num_atoms,
            matmul_dtype=self.matmul_dtype,
            name="members",
        )
        return member(obs, action)


def ensemble_member(ensemble_params: dict, index: int) -> dict:
    """The parameters of one member of an `EnsembleCritic`, usable with `Critic`."""
    members = ensemble_params["params"]["members"]
    return {"params": jax.tree_util.tree_map(lambda x: x[index], members)}


class DeterministicPolicy(nn.Module):
    """a = tanh(MLP(s)): obs [B, O] -> action [B, A] in [-1, 1]."""

    hidden_sizes: Sequence[int]
    action_size: int
    layer_init: str = "pytorch"
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        mlp = MLP(
            self.hidden_sizes, self.action_size, self.layer_init, matmul_dtype=self.matmul_dtype
        )
        return jnp.tanh(mlp(obs))


class GaussianPolicy(nn.Module):
    """Pre-squash Gaussian: obs [B, O] -> (mean [B, A], log_std [B, A]).

    log_std is clipped to [log_std_min, log_std_max] (the gradient is zero
    outside, as in SAC's reference implementation).
    """

    hidden_sizes: Sequence[int]
    action_size: int
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    layer_init: str = "pytorch"
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        out = MLP(
            self.hidden_sizes, 2 * self.action_size, self.layer_init, matmul_dtype=self.matmul_dtype
        )(obs)
        mean, log_std = jnp.split(out, 2, axis=-1)
        return mean, jnp.clip(log_std, self.log_std_min, self.log_std_max)


class BoundedGaussianPolicy(nn.Module):
    """Gaussian in action space (MPO's policy): obs [B, O] -> (mean [B, A], log_std [B, A]).

    mean = tanh(.) lies in (-1, 1) and std = softplus(.) is clipped to
    [std_min, std_max], as in Acme's and Tonic's MPO. Samples may fall outside
    [-1, 1]: the learner clips them (`clip_action`) both when acting and
    before the critic sees them. Unlike a tanh-squashed Gaussian, whose
    pre-squash mean can drift where tanh saturates (every sample then maps to
    the same action, the E-step's weights turn uniform and nothing pulls the
    mean back), the mean here stays inside the box.
    """

    hidden_sizes: Sequence[int]
    action_size: int
    std_min: float = 1e-4
    std_max: float = 1.0
    layer_init: str = "pytorch"
    input_layer: str = "relu"

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        out = MLP(self.hidden_sizes, 2 * self.action_size, self.layer_init, self.input_layer)(obs)
        raw_mean, raw_std = jnp.split(out, 2, axis=-1)
        std = jnp.clip(jax.nn.softplus(raw_std), self.std_min, self.std_max)
        return jnp.tanh(raw_mean), jnp.log(std)


def clip_action(action: jax.Array) -> jax.Array:
    """Clip an action-space sample into [-1, 1] (what the environment would do)."""
    return jnp.clip(action, -1.0, 1.0)


def squash(pre_tanh: jax.Array) -> jax.Array:
    """Map an unbounded action to [-1, 1]."""
    return jnp.tanh(pre_tanh)


def gaussian_log_prob(x: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    """Log-density of a diagonal Gaussian, summed over the last axis: [..., A] -> [...]."""
    z = (x - mean) * jnp.exp(-log_std)
    per_dim = -0.5 * z**2 - log_std - 0.5 * math.log(2.0 * math.pi)
    return per_dim.sum(axis=-1)


def log_det_tanh_jacobian(pre_tanh: jax.Array) -> jax.Array:
    """log |d tanh(u) / du| = log(1 - tanh(u)^2), summed over the last axis.

    Written as 2 (log 2 - u - softplus(-2u)), which stays finite where
    1 - tanh(u)^2 underflows to zero.
    """
    per_dim = 2.0 * (math.log(2.0) - pre_tanh - jax.nn.softplus(-2.0 * pre_tanh))
    return per_dim.sum(axis=-1)


def tanh_gaussian_sample(
    mean: jax.Array, log_std: jax.Array, key: jax.Array, noise: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
    """Reparameterised sample of tanh(N(mean, std)) and its log-probability.

    mean, log_std [B, A] -> action [B, A] in (-1, 1), log_prob [B] (summed
    over action dimensions, tanh correction included). The standard-normal
    draw comes from `key`, or is `noise` [B, A] where given (colored
    exploration noise, `jax_rl.noise`).
    """
    if noise is None:
        noise = jax.random.normal(key, mean.shape, mean.dtype)
    pre_tanh = mean + jnp.exp(log_std) * noise
    log_prob = gaussian_log_prob(pre_tanh, mean, log_std) - log_det_tanh_jacobian(pre_tanh)
    return squash(pre_tanh), log_prob


def polyak_update(target: Any, online: Any, tau: ArrayLike) -> Any:
    """target <- (1 - tau) target + tau online, leaf by leaf over two pytrees."""
    return jax.tree_util.tree_map(lambda t, o: t + tau * (o - t), target, online)
