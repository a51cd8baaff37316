"""Networks and the tanh-squashed Gaussian shared by the learners.

Shapes: B batch, O observation size, A action size, E ensemble members.

The network families live here and nowhere else; a learner names one by its
`Config` (`actor_network`, `critic_network`) and `body` builds it:

    mlp     ReLU hidden layers (`MLP`), the published networks of TD3, SAC and MPO
    simba   SimBa (Lee et al., ICLR 2025): linear embedding, residual blocks
            x + MLP(LayerNorm(x)) with 4x expansion, a final LayerNorm (`Simba`)
    simbav2 SimbaV2 (Lee et al., 2025, arXiv 2502.15280): every hidden vector on
            the unit sphere, blocks that interpolate towards an MLP's output,
            bias-free weights projected back to unit norm after every optimiser
            step (`SimbaV2`, `project`)
    batchrenorm
            CrossQ's (Bhatt et al., ICLR 2024): BatchRenorm on the input and after
            every hidden activation (`RenormMLP`, `BatchRenorm`); the crossq critic
            recipe reads a learner's mlp as this family

BatchRenorm keeps running statistics in Flax's "batch_stats" collection; the
learners hold that collection in their `State` beside the parameters, and only
their update runs a network in training mode (`Renorm.train`), which writes it.

Every policy acts in [-1, 1]; the environment adapters rescale to the
environment's bounds. The same `squash`/`tanh_gaussian_sample` functions are
used when acting and when learning, so the critic sees the actions the agent
really takes (DESIGN.md section 7, pitfall 4).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
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
NETWORKS = ("mlp", "simba", "simbav2", "batchrenorm")
SIMBA_EXPANSION = 4  # a SimBa block's inner width, in multiples of its width
SIMBAV2_SHIFT = 3.0  # the constant SimbaV2 appends to its input before normalising it
HYPER_PREFIX = "HyperDense"  # the modules whose kernels `project` keeps at unit norm


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


@dataclasses.dataclass(frozen=True)
class Renorm:
    """How a network's BatchRenorm layers behave (CrossQ). `train`: normalise by the
    batch's statistics (corrected by r and d once warmed up) and update the running
    ones; otherwise normalise by the running statistics and change nothing."""

    momentum: float = 0.99
    warmup_steps: int = 100_000
    train: bool = False


class BatchRenorm(nn.Module):
    """Batch renormalisation (Ioffe, 2017) over the last axis: x [..., F] -> [..., F].

    Training mode, with batch moments mu_B, sigma_B and running ones mu, sigma
    (sigma^2 = var + epsilon for both):

        r = clip(sigma_B / sigma, 1/r_max, r_max),  d = clip((mu_B - mu) / sigma, -d_max, d_max)
        y = ((x - mu_B) / sigma_B * r + d) * scale + bias      (r, d: no gradient)
        mu <- m mu + (1 - m) mu_B,  var <- m var + (1 - m) var_B,  steps <- steps + 1

    with r = 1 and d = 0 (batch normalisation) for the first `warmup_steps`
    training calls. Evaluation mode: y = (x - mu) / sigma * scale + bias.
    r_max 3, d_max 5 and epsilon 1e-3 are CrossQ's (and SBX's) values.
    """

    renorm: Renorm = Renorm()
    r_max: float = 3.0
    d_max: float = 5.0
    epsilon: float = 1e-3

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        features = x.shape[-1]
        mean = self.variable("batch_stats", "mean", jnp.zeros, (features,), jnp.float32)
        var = self.variable("batch_stats", "var", jnp.ones, (features,), jnp.float32)
        steps = self.variable("batch_stats", "steps", jnp.zeros, (), jnp.int32)
        scale = self.param("scale", nn.initializers.ones, (features,), jnp.float32)
        bias = self.param("bias", nn.initializers.zeros, (features,), jnp.float32)
        x = x.astype(jnp.float32)
        if not self.renorm.train:
            y = (x - mean.value) * jax.lax.rsqrt(var.value + self.epsilon)
            return y * scale + bias
        axes = tuple(range(x.ndim - 1))
        batch_mean, batch_var = x.mean(axis=axes), x.var(axis=axes)
        batch_std = jnp.sqrt(batch_var + self.epsilon)
        running_std = jnp.sqrt(var.value + self.epsilon)
        r = jnp.clip(batch_std / running_std, 1.0 / self.r_max, self.r_max)
        d = jnp.clip((batch_mean - mean.value) / running_std, -self.d_max, self.d_max)
        warm = steps.value >= self.renorm.warmup_steps
        r = jax.lax.stop_gradient(jnp.where(warm, r, 1.0))
        d = jax.lax.stop_gradient(jnp.where(warm, d, 0.0))
        y = (x - batch_mean) / batch_std * r + d
        if not self.is_initializing():
            m = self.renorm.momentum
            mean.value = m * mean.value + (1.0 - m) * jax.lax.stop_gradient(batch_mean)
            var.value = m * var.value + (1.0 - m) * jax.lax.stop_gradient(batch_var)
            steps.value = steps.value + 1
        return y * scale + bias


class RenormMLP(nn.Module):
    """CrossQ's network: BatchRenorm -> [Linear -> ReLU -> BatchRenorm] per hidden
    size -> Linear. Initialised as Flax's defaults (LeCun normal, zero bias)."""

    hidden_sizes: Sequence[int]
    output_size: int
    renorm: Renorm = Renorm()
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        dtype = MATMUL_DTYPES[self.matmul_dtype]
        x = BatchRenorm(self.renorm)(x)
        for size in self.hidden_sizes:
            x = BatchRenorm(self.renorm)(nn.relu(nn.Dense(size, dtype=dtype)(x)))
        return nn.Dense(self.output_size, dtype=dtype)(x).astype(jnp.float32)


class SimbaBlock(nn.Module):
    """x + W2 relu(W1 LayerNorm(x)): [..., H] -> [..., H], W1 [H, 4H], W2 [4H, H]
    (He-normal initialisation, as SimBa's)."""

    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        dtype = MATMUL_DTYPES[self.matmul_dtype]
        width = x.shape[-1]
        he = nn.initializers.he_normal()
        h = nn.Dense(SIMBA_EXPANSION * width, kernel_init=he, dtype=dtype)(LayerNorm()(x))
        h = nn.Dense(width, kernel_init=he, dtype=dtype)(nn.relu(h))
        return x + h.astype(x.dtype)


def orthogonal(scale: float = 1.0) -> Callable[..., jax.Array]:
    """Flax's orthogonal initialiser, computed one matrix at a time under `vmap` (same values).

    Batched (the ensemble's and the population's vmaps make the batch), jaxlib's QR on the
    CPU splits its batch over XLA's thread pool and waits for the pieces; two such QRs
    side by side in one jitted initialisation can hold every thread of a 2-thread pool
    and wait forever (seen on 2 cores). One matrix at a time, nothing waits on the pool.
    """
    base = nn.initializers.orthogonal(scale)

    def init(key: jax.Array, shape: tuple, dtype: Any = jnp.float32) -> jax.Array:
        return jax.custom_batching.sequential_vmap(lambda k: base(k, shape, dtype))(key)

    return init


class Simba(nn.Module):
    """SimBa: Linear(width) -> `blocks` x SimbaBlock -> LayerNorm -> Linear(output).

    The embedding and the output layer are orthogonally initialised (gain 1), as
    SimBa's. Its running observation normalisation is the learner's
    `normalize_obs` (`jax_rl.core.normalization`), applied before the network.
    """

    width: int
    blocks: int
    output_size: int
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        dtype = MATMUL_DTYPES[self.matmul_dtype]
        x = nn.Dense(self.width, kernel_init=orthogonal(), dtype=dtype)(x).astype(jnp.float32)
        for _ in range(self.blocks):
            x = SimbaBlock(self.matmul_dtype)(x)
        x = LayerNorm()(x)
        out = nn.Dense(self.output_size, kernel_init=orthogonal(), dtype=dtype)(x)
        return out.astype(jnp.float32)


def l2_normalize(x: jax.Array, axis: int = -1, epsilon: float = 1e-8) -> jax.Array:
    """x / max(||x||, epsilon) along `axis`: a tiny vector is still put on the sphere, a zero
    one stays zero (no NaN, in value or gradient)."""
    return x * jax.lax.rsqrt(jnp.maximum((x * x).sum(axis=axis, keepdims=True), epsilon**2))


class HyperDense(nn.Module):
    """A bias-free linear layer whose kernel [in, out] keeps unit-norm columns: each output
    unit's weight vector lies on the unit sphere. Initialised orthogonal, then with its
    columns normalised (a widening layer cannot have orthonormal columns); after every
    optimiser step `project` normalises them again."""

    features: int
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        def init(key: jax.Array, shape: tuple, dtype: Any = jnp.float32) -> jax.Array:
            return l2_normalize(orthogonal()(key, shape, dtype), axis=-2)

        kernel = self.param("kernel", init, (x.shape[-1], self.features), jnp.float32)
        dtype = MATMUL_DTYPES[self.matmul_dtype] or jnp.float32
        return (x.astype(dtype) @ kernel.astype(dtype)).astype(jnp.float32)


class Scaler(nn.Module):
    """x * s, a learned per-feature scale that starts at `start`. It is stored as s / (start
    / stored), starting at `stored`, so Adam's step on it (about the learning rate whatever
    the parameter's size) moves s by about lr * start / stored: SimbaV2's way of giving
    each scaler its own effective learning rate."""

    start: float
    stored: float

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        param = self.param("scaler", nn.initializers.constant(self.stored), (x.shape[-1],))
        return x * param * (self.start / self.stored)


class SimbaV2Block(nn.Module):
    """h <- normalize(h + alpha (normalize(W2 relu(s W1 h)) - h)): [..., H] -> [..., H].

    W1 [H, 4H] and W2 [4H, H] are `HyperDense`; s (start sqrt(2 / 4H)) and alpha (start
    1 / (blocks + 1), stored at 1 / sqrt(H)) are `Scaler`s. The interpolation replaces
    SimBa's sum, so h stays on the unit sphere.
    """

    blocks: int
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, h: jax.Array) -> jax.Array:
        width = h.shape[-1]
        inner = SIMBA_EXPANSION * width
        x = HyperDense(inner, self.matmul_dtype)(h)
        x = Scaler(math.sqrt(2.0 / inner), math.sqrt(2.0 / inner))(x)
        x = l2_normalize(HyperDense(width, self.matmul_dtype)(nn.relu(x) + 1e-8))
        alpha = Scaler(1.0 / (self.blocks + 1), 1.0 / math.sqrt(width))
        return l2_normalize(h + alpha(x - h))


class SimbaV2(nn.Module):
    """SimbaV2: [x, 3] normalised -> HyperDense(width), scaled, normalised -> `blocks` x
    SimbaV2Block -> head HyperDense(width), scaled -> HyperDense(output) + bias.

    The appended constant keeps the input's magnitude once it is projected onto the
    sphere. Its observation normalisation is the learner's `normalize_obs`; its
    distributional critic is the learners' categorical critic (`critic categorical`), and
    its reward scaling the learners' `scale_rewards` (`jax_rl.core.normalization`). The
    published policy has two such heads (mean, log-std); this one head emits both.
    """

    width: int
    blocks: int
    output_size: int
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        scale = math.sqrt(2.0 / self.width)
        # broadcast_to, not jnp.full: jax2onnx's jnp.full needs a concrete shape, and an
        # exported policy keeps its batch dimension symbolic (`jax_rl.watch.export`).
        shift = jnp.broadcast_to(jnp.float32(SIMBAV2_SHIFT), x.shape[:-1] + (1,))
        x = l2_normalize(jnp.concatenate([x.astype(jnp.float32), shift], axis=-1))
        h = l2_normalize(Scaler(scale, scale)(HyperDense(self.width, self.matmul_dtype)(x)))
        for _ in range(self.blocks):
            h = SimbaV2Block(self.blocks, self.matmul_dtype)(h)
        head = Scaler(scale, scale)(HyperDense(self.width, self.matmul_dtype)(h))
        out = HyperDense(self.output_size, self.matmul_dtype)(head)
        return out + self.param("bias", nn.initializers.zeros, (self.output_size,))


def project(params: Any) -> Any:
    """The parameters with every `HyperDense` kernel's columns scaled back to unit norm
    (SimbaV2's projection after an optimiser step); every other leaf unchanged, so this
    is the identity on the other families. Works on stacked (ensemble) kernels too: the
    input axis is the second to last."""

    def one(path: tuple, leaf: jax.Array) -> jax.Array:
        names = [getattr(k, "key", "") for k in path]
        inside = any(str(n).startswith(HYPER_PREFIX) for n in names)
        if inside and names[-1] == "kernel":
            return l2_normalize(leaf, axis=-2)
        return leaf

    return jax.tree_util.tree_map_with_path(one, params)


def body(
    network: str,
    hidden_sizes: Sequence[int],
    output_size: int,
    *,
    blocks: int = 1,
    layer_init: str = "pytorch",
    input_layer: str = "relu",
    matmul_dtype: str = "float32",
    renorm: Renorm | None = None,
) -> nn.Module:
    """The network of family `network` (`NETWORKS`) mapping [..., in] -> [..., output_size].

    "mlp": `MLP` of hidden_sizes. "simba" and "simbav2": `Simba` or `SimbaV2` whose width
    is the hidden size (one, or several equal ones) and `blocks` residual blocks;
    layer_init and input_layer are MLP choices. "batchrenorm": CrossQ's `RenormMLP` of
    hidden_sizes, its BatchRenorm layers set by `renorm` (their momentum, warm-up and
    mode; `Renorm()` when None).
    """
    if network == "simba":
        return Simba(hidden_sizes[0], blocks, output_size, matmul_dtype)
    if network == "simbav2":
        return SimbaV2(hidden_sizes[0], blocks, output_size, matmul_dtype)
    if network == "batchrenorm":
        return RenormMLP(hidden_sizes, output_size, renorm or Renorm(), matmul_dtype)
    if network != "mlp":
        raise ValueError(f"network must be one of {', '.join(NETWORKS)}, got {network!r}")
    return MLP(hidden_sizes, output_size, layer_init, input_layer, matmul_dtype)


class Critic(nn.Module):
    """Q(s, a): obs [B, O], action [B, A] -> [B]; with num_atoms K > 0 the logits [B, K]
    of a categorical value distribution instead (`jax_rl.algos.critics.categorical`)."""

    hidden_sizes: Sequence[int]
    layer_init: str = "pytorch"
    input_layer: str = "relu"
    num_atoms: int = 0
    matmul_dtype: str = "float32"
    network: str = "mlp"
    blocks: int = 1
    renorm: Renorm | None = None

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action], axis=-1)
        outputs = max(self.num_atoms, 1)
        out = body(
            self.network,
            self.hidden_sizes,
            outputs,
            blocks=self.blocks,
            layer_init=self.layer_init,
            input_layer=self.input_layer,
            matmul_dtype=self.matmul_dtype,
            renorm=self.renorm,
        )(x)
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
    if not critic.hidden_sizes or critic.network != "mlp":
        # a linear critic has nothing to save; the other families are evaluated tiled
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
    network: str = "mlp"
    blocks: int = 1
    renorm: Renorm | None = None

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        ensemble = nn.vmap(
            Critic,
            variable_axes={"params": 0, "batch_stats": 0},
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
            network=self.network,
            blocks=self.blocks,
            renorm=self.renorm,
            name="members",
        )
        return member(obs, action)


def ensemble_member(ensemble_variables: dict, index: int) -> dict:
    """The variables (parameters, and running statistics where it has them) of one member
    of an `EnsembleCritic`, usable with `Critic`."""
    return {
        collection: jax.tree_util.tree_map(lambda x: x[index], tree["members"])
        for collection, tree in ensemble_variables.items()
    }


class DeterministicPolicy(nn.Module):
    """a = tanh(MLP(s)): obs [B, O] -> action [B, A] in [-1, 1]."""

    hidden_sizes: Sequence[int]
    action_size: int
    layer_init: str = "pytorch"
    matmul_dtype: str = "float32"
    network: str = "mlp"
    blocks: int = 1
    renorm: Renorm | None = None

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        net = body(
            self.network,
            self.hidden_sizes,
            self.action_size,
            blocks=self.blocks,
            layer_init=self.layer_init,
            matmul_dtype=self.matmul_dtype,
            renorm=self.renorm,
        )
        return jnp.tanh(net(obs))


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
    network: str = "mlp"
    blocks: int = 1
    renorm: Renorm | None = None

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        out = body(
            self.network,
            self.hidden_sizes,
            2 * self.action_size,
            blocks=self.blocks,
            layer_init=self.layer_init,
            matmul_dtype=self.matmul_dtype,
            renorm=self.renorm,
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
    network: str = "mlp"
    blocks: int = 1

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        out = body(
            self.network,
            self.hidden_sizes,
            2 * self.action_size,
            blocks=self.blocks,
            layer_init=self.layer_init,
            input_layer=self.input_layer,
        )(obs)
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
    exploration noise, `jax_rl.core.noise`).
    """
    if noise is None:
        noise = jax.random.normal(key, mean.shape, mean.dtype)
    pre_tanh = mean + jnp.exp(log_std) * noise
    log_prob = gaussian_log_prob(pre_tanh, mean, log_std) - log_det_tanh_jacobian(pre_tanh)
    return squash(pre_tanh), log_prob


def polyak_update(target: Any, online: Any, tau: ArrayLike) -> Any:
    """target <- (1 - tau) target + tau online, leaf by leaf over two pytrees."""
    return jax.tree_util.tree_map(lambda t, o: t + tau * (o - t), target, online)
