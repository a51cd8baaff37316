"""MPO: Maximum a Posteriori Policy Optimisation (Abdolmaleki et al., 2018).

Shapes: B batch, N action samples per state, A action size, O observation size.

Policy. A Gaussian in action space with mean tanh(.) in (-1, 1) and standard
deviation softplus(.) in [1e-4, 1] (`networks.BoundedGaussianPolicy`); a
sample u is clipped into [-1, 1] before the environment or the critic sees it
(`clip(u)` below).

E-step. Sample N actions u_bn ~ pi_targ(.|s_b) and score them with
the target critic, Q_bn = Q_targ(s_b, clip(u_bn)) (`critic_many_actions`:
what depends on the state alone is computed once per state, not N times). The temperature eta
minimises the convex dual

    g(eta) = eta * epsilon + eta * mean_b log mean_n exp(Q_bn / eta),

and the non-parametric improved policy weights the samples by
w_bn = softmax_n(Q_bn / eta).

Action penalty (Abdolmaleki et al. 2020, MO-MPO; on in Acme's and Tonic's
MPO). Every sample beyond [-1, 1] scores as its clipped action, so the
E-step's weights would favour the whole tail and drive the mean to the bounds
and the std to its maximum (seen on cartpole-swingup). A second E-step on
P_bn = -|u_bn - clip(u_bn)|^2, with its own temperature eta_p (the same
dual with bound `epsilon_penalty`, followed by one Adam step per update, as
the KL multipliers are, whatever `dual_solver` is), gives weights
v_bn = softmax_n(P_bn / eta_p); the M-step fits w + v.

M-step. Weighted maximum likelihood with decoupled KL constraints (one
Lagrange multiplier per action dimension), fitting the mean with the target's
standard deviation and the standard deviation with the target's mean:

    L_pi = -mean_b sum_n (w_bn + v_bn) [log N(u_bn; mu(s_b), sigma_targ(s_b))
                               + log N(u_bn; mu_targ(s_b), sigma(s_b))]
           + sum_d sg(alpha_mean_d) KL_mean_d + sg(alpha_std_d) KL_std_d
    L_alpha = sum_d alpha_mean_d (eps_mean - sg(KL_mean_d)) + alpha_std_d (eps_std - sg(KL_std_d))

where KL_mean_d, KL_std_d are batch means of the per-dimension KL between
the target policy and the mean-only and std-only policies (`gaussian_kl`,
written with standard deviations). alpha = softplus(raw parameter).

Critic. One critic (not twin), trained by TD on y = r + gamma * d *
mean_n Q_targ(s', clip(u'_n)), u'_n ~ pi_targ(.|s'). Target actor and critic
follow the online ones by Polyak averaging (tau) every update, or, with
`target_update_period` P > 0, are copies of them refreshed every P updates (as
in Acme's MPO): the KL constraints then bound how far the policy moves from a
target held fixed for P updates rather than from a moving average.

Networks. MLPs of `hidden_sizes` for the actor and the critic; with
`input_layer` "layernorm" their first hidden layer is Linear -> LayerNorm ->
tanh, as in Acme's LayerNormMLP, instead of Linear -> ReLU. `actor_network` /
`critic_network` simba puts SimBa's residual blocks (width: the hidden size) in
their place; the E-step then scores its N actions with the tiled critic.

Squashing. The agent acts with clip(u), the critic always sees clip(u), and
the M-step fits the Gaussian to the sampled u themselves; the deterministic
action is the mean. (A tanh-squashed Gaussian, as SAC's, failed here: MPO's
weighted likelihood has no term that keeps the pre-squash mean where tanh
still varies, and on cartpole-swingup policies drifted into saturation,
every sample mapping to the same action, and stayed there.)

The temperature dual is solved by `Config.dual_solver`:
- "scipy": scipy.optimize.minimize (SLSQP in log eta, eta >= 1e-6, the exact
  gradient from one jitted JAX value-and-grad, warm-started from the previous eta), on
  the host, reached from jitted code through `jax.pure_callback`;
- "newton": an exact in-graph solve, safeguarded Newton on log eta;
- "adam": one Adam step on log eta per update, as some libraries do.
"""

from __future__ import annotations

import math
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import optax
import scipy.optimize
from jax.typing import ArrayLike

from jax_rl.algos import common
from jax_rl.core import normalization
from jax_rl.core.transition import Transition
from jax_rl.networks import (
    INPUT_LAYERS,
    BoundedGaussianPolicy,
    Critic,
    clip_action,
    critic_many_actions,
    gaussian_log_prob,
    polyak_update,
)

DUAL_SOLVERS = ("scipy", "newton", "adam")
MIN_TEMPERATURE = 1e-6
MAX_TEMPERATURE = 1e6  # the in-graph solver's bracket; the dual's minimum lies far inside
NEWTON_STEPS = 25

# XLA's CPU backend by default hands matrix products to its YNN library together with
# the elementwise work around them. For the E-step's critic (`critic_many_actions`
# with the LayerNorm input layer) that fusion puts the whole first layer, its closed-form
# normalisation included, in front of the second layer's [N B, H] x [H, H] product and
# materialises [N, B, H] broadcasts of the parameters to feed it; with A > 1 action
# dimensions one update took 47 ms on one core of this machine for walker-walk's sizes
# (O 24, A 6, the dm_control preset) against 10 ms for cartpole's (A 1). Giving YNN only
# the matrix products themselves takes it to 14 ms; TD3 and SAC do not have the pattern
# and keep XLA's defaults. `algos.compiler_options` applies this on a CPU only.
CPU_COMPILER_OPTIONS = {
    "xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT",
}


class Config(flax.struct.PyTreeNode):
    """MPO hyperparameters. Shapes, counts and the solver are static; the rest are traced."""

    hidden_sizes: tuple[int, ...] = common.field(
        (256, 256), "hidden layer sizes of the actor and of the critic", static=True
    )
    layer_init: str = common.field(
        "lecun", "layer initialisation: pytorch (uniform +-1/sqrt(fan_in)) or lecun", static=True
    )
    input_layer: str = common.field(
        "relu",
        "first hidden layer of the actor and the critic: relu, or layernorm "
        "(Linear -> LayerNorm -> tanh, as Acme's LayerNormMLP)",
        static=True,
    )
    num_samples: int = common.field(20, "N: actions sampled per state in the E-step", static=True)
    dual_solver: str = common.field(
        "scipy",
        "temperature solver: scipy (SLSQP on the host), newton (in-graph) or adam",
        static=True,
    )
    actor_lr: float = common.field(3e-4, "Adam learning rate of the actor")
    critic_lr: float = common.field(3e-4, "Adam learning rate of the critic")
    dual_lr: float = common.field(
        1e-2, "Adam learning rate of the KL multipliers (and of eta for adam)"
    )
    discount: float = common.field(0.99, "gamma, the per-step discount of future rewards")
    tau: float = common.field(
        0.005, "Polyak rate of the target actor and critic (when target_update_period is 0)"
    )
    target_update_period: int = common.field(
        0,
        "0: Polyak targets (tau) every update; P > 0: copy the online actor and critic to "
        "the targets every P updates, as Acme's MPO does (100 there)",
    )
    epsilon: float = common.field(0.1, "KL bound of the E-step (sets the temperature)")
    epsilon_mean: float = common.field(2.5e-3, "KL bound on the policy mean, per action dimension")
    epsilon_std: float = common.field(
        1e-4, "KL bound on the policy std, per action dimension (per update)"
    )
    epsilon_penalty: float = common.field(
        1e-3, "KL bound of the action-penalty E-step (keeps samples inside [-1, 1])"
    )
    init_temperature: float = common.field(1.0, "initial temperature eta (of both E-steps)")
    init_alpha_mean: float = common.field(1.0, "initial multiplier of the mean KL constraint")
    init_alpha_std: float = common.field(10.0, "initial multiplier of the std KL constraint")
    normalize_obs: bool = common.field(
        False, "standardise observations with running statistics", static=True
    )
    scale_rewards: bool = common.scale_rewards_field()
    # Network families (the same fields as TD3's and SAC's; widths: hidden_sizes).
    actor_network: str = common.network_field("actor")
    critic_network: str = common.network_field("critic")
    actor_blocks: int = common.blocks_field("actor", 1)
    critic_blocks: int = common.blocks_field("critic", 2)

    def __post_init__(self) -> None:
        common.check_hidden_sizes(self)
        common.check_init(self)
        common.check_networks(self, tuple(self.hidden_sizes), tuple(self.hidden_sizes))
        common.check_fields(
            self,
            positive=(
                "actor_lr",
                "critic_lr",
                "dual_lr",
                "epsilon",
                "epsilon_mean",
                "epsilon_std",
                "epsilon_penalty",
                "init_temperature",
                "init_alpha_mean",
                "init_alpha_std",
            ),
            unit_interval=("discount", "tau"),
            non_negative=("target_update_period",),
            positive_ints=("num_samples",),
        )
        period = self.target_update_period
        if common.is_concrete_number(period) and period != int(period):
            raise ValueError(f"MPO target_update_period must be an integer, got {period}")
        if self.input_layer not in INPUT_LAYERS:
            choices = ", ".join(INPUT_LAYERS)
            raise ValueError(f"MPO input_layer must be one of {choices}, got {self.input_layer!r}")
        if self.dual_solver not in DUAL_SOLVERS:
            choices = ", ".join(DUAL_SOLVERS)
            raise ValueError(f"MPO dual_solver must be one of {choices}, got {self.dual_solver!r}")


class State(flax.struct.PyTreeNode):
    actor_params: Any
    critic_params: Any
    target_actor_params: Any
    target_critic_params: Any
    actor_opt_state: optax.OptState
    critic_opt_state: optax.OptState
    temperature: jax.Array  # eta
    temperature_opt_state: optax.OptState  # Adam on log eta, used by the "adam" solver
    penalty_temperature: jax.Array  # eta of the action-penalty E-step
    penalty_temperature_opt_state: optax.OptState
    alpha_params: dict[str, jax.Array]  # {"mean": [A], "std": [A]}, alpha = softplus(.)
    alpha_opt_state: optax.OptState
    step: jax.Array
    obs_stats: Any  # normalization.ObsStats with normalize_obs, else None
    reward_stats: Any  # normalization.RewardStats with scale_rewards, else None
    config: Config
    action_size: int = flax.struct.field(pytree_node=False)


# ---------------------------------------------------------------- duals and KL


def gaussian_kl(mean_p: jax.Array, std_p: jax.Array, mean_q: jax.Array, std_q: jax.Array):
    """KL(N(mean_p, std_p^2) || N(mean_q, std_q^2)) per dimension (no sum)."""
    return jnp.log(std_q / std_p) + (std_p**2 + (mean_p - mean_q) ** 2) / (2.0 * std_q**2) - 0.5


def temperature_dual(temperature: jax.Array, q: jax.Array, epsilon: jax.Array) -> jax.Array:
    """g(eta) = eta eps + eta mean_b log mean_n exp(Q_bn / eta); q [B, N] -> scalar."""
    return q.max(axis=1).mean() + _centred_dual(temperature, q, epsilon)


def _centred_dual(temperature: jax.Array, q: jax.Array, epsilon: jax.Array) -> jax.Array:
    """g(eta) - mean_b max_n Q_bn, the part that depends on eta.

    With each row's maximum taken out the terms stay of the size of eta, so
    their float32 derivative has no catastrophic cancellation and the solvers
    agree to float32 precision whatever the scale of Q.
    """
    gap = q - q.max(axis=1, keepdims=True)  # <= 0
    log_mean_exp = jax.nn.logsumexp(gap / temperature, axis=1) - math.log(q.shape[1])
    return temperature * epsilon + temperature * log_mean_exp.mean()


_dual_value_and_grad = jax.jit(jax.value_and_grad(_centred_dual))


def _solve_on_host(q: np.ndarray, start: ArrayLike, epsilon: ArrayLike) -> np.ndarray:
    """SLSQP on g(eta) over x = log eta >= log MIN_TEMPERATURE, with JAX's exact gradient.

    The dual and its gradient come from one jitted JAX value-and-grad,
    evaluated in float64 (SLSQP's stopping test compares function values, which
    float32 would blur near the minimum). Log space keeps the problem well scaled
    whatever the size of Q; the bound there is the same bound eta >= 1e-6.
    """
    with jax.enable_x64(True):
        q64 = np.asarray(q, np.float64)
        eps64 = np.float64(epsilon)

        def value_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
            eta = math.exp(float(x[0]))
            value, grad = _dual_value_and_grad(np.float64(eta), q64, eps64)
            return float(value), np.array([float(grad) * eta])

        x0 = math.log(float(np.clip(start, MIN_TEMPERATURE, MAX_TEMPERATURE)))

        result = scipy.optimize.minimize(
            value_and_grad,
            [x0],
            jac=True,
            method="SLSQP",
            bounds=[(math.log(MIN_TEMPERATURE), math.log(MAX_TEMPERATURE))],
            options={"ftol": 1e-14, "maxiter": 200},
        )
    return np.float32(math.exp(float(result.x[0])))


def solve_temperature_scipy(q: jax.Array, start: jax.Array, epsilon: jax.Array) -> jax.Array:
    """argmin_eta g(eta) by scipy on the host; callable from jitted code."""
    out = jax.ShapeDtypeStruct((), jnp.float32)
    return jax.pure_callback(_solve_on_host, out, q, start, epsilon, vmap_method="sequential")


def solve_temperature_newton(q: jax.Array, start: jax.Array, epsilon: jax.Array) -> jax.Array:
    """argmin_eta g(eta) in-graph: Newton on g'(e^x) = 0 in x = log eta, kept inside a
    bisection bracket (g is convex, so g' increases and the root is unique)."""

    def slope(x: jax.Array) -> jax.Array:
        return jax.grad(_centred_dual)(jnp.exp(x), q, epsilon)

    lo, hi = jnp.log(MIN_TEMPERATURE), jnp.log(MAX_TEMPERATURE)
    x0 = jnp.clip(jnp.log(jnp.maximum(start, MIN_TEMPERATURE)), lo, hi)

    def newton_step(_: int, carry: tuple) -> tuple:
        x, lo, hi = carry
        f, df = jax.value_and_grad(slope)(x)
        lo = jnp.where(f < 0, x, lo)
        hi = jnp.where(f >= 0, x, hi)
        newton = x - f / df
        inside = (newton > lo) & (newton < hi) & (df > 0) & jnp.isfinite(newton)
        return jnp.where(inside, newton, 0.5 * (lo + hi)), lo, hi

    x, _, _ = jax.lax.fori_loop(0, NEWTON_STEPS, newton_step, (x0, lo, hi))
    # When the dual's minimum lies below the bound (all samples alike), the root
    # search ends near the bound; compare values there, which float32 computes
    # reliably even where the slope's terms cancel.
    eta = jnp.exp(x)
    at_bound = _centred_dual(MIN_TEMPERATURE, q, epsilon) <= _centred_dual(eta, q, epsilon)
    return jnp.where(at_bound, MIN_TEMPERATURE, eta)


# ---------------------------------------------------------------- losses


def _networks(state: State) -> tuple[BoundedGaussianPolicy, Critic]:
    cfg = state.config
    return _make_networks(cfg, state.action_size)


def _make_networks(cfg: Config, action_size: int) -> tuple[BoundedGaussianPolicy, Critic]:
    policy = BoundedGaussianPolicy(
        cfg.hidden_sizes,
        action_size,
        layer_init=cfg.layer_init,
        input_layer=cfg.input_layer,
        network=cfg.actor_network,
        blocks=cfg.actor_blocks,
    )
    critic = Critic(
        cfg.hidden_sizes,
        layer_init=cfg.layer_init,
        input_layer=cfg.input_layer,
        network=cfg.critic_network,
        blocks=cfg.critic_blocks,
    )
    return policy, critic


def sample_target_actions(
    state: State, obs: jax.Array, key: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """u [N, B, A] from the target policy at obs [B, O], with its mean, std [B, A] and
    the target critic's Q [B, N] of clip(u)."""
    actor, critic = _networks(state)
    mean, log_std = actor.apply(state.target_actor_params, obs)
    std = jnp.exp(log_std)
    n = state.config.num_samples
    u = mean[None] + std[None] * jax.random.normal(key, (n,) + mean.shape)
    # The state's part of the critic computed once, not N times (critic_many_actions).
    q = critic_many_actions(critic, state.target_critic_params, obs, clip_action(u))  # [N, B]
    return u, mean, std, q.T


def critic_loss(critic_params: Any, state: State, batch: Transition, target: jax.Array):
    """0.5 mean_B (Q(s, a) - y)^2; target y [B] is a constant."""
    _, critic = _networks(state)
    q = critic.apply(critic_params, batch.obs, batch.action)
    return 0.5 * ((q - target) ** 2).mean()


def policy_loss(
    actor_params: Any,
    alpha: dict[str, jax.Array],
    state: State,
    obs: jax.Array,
    u: jax.Array,
    weights: jax.Array,
    target_mean: jax.Array,
    target_std: jax.Array,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Weighted MLE with decoupled KL penalties; u [N, B, A], weights [B, N].

    Returns the loss and {"kl_mean", "kl_std"} [A] (batch means per dimension).
    """
    actor, _ = _networks(state)
    mean, log_std = actor.apply(actor_params, obs)
    std = jnp.exp(log_std)
    log_target_std = jnp.log(target_std)
    log_p_mean = gaussian_log_prob(u, mean[None], log_target_std[None])  # [N, B]
    log_p_std = gaussian_log_prob(u, target_mean[None], log_std[None])
    likelihood = -(weights.T * (log_p_mean + log_p_std)).sum(axis=0).mean()
    kl_mean = gaussian_kl(target_mean, target_std, mean, target_std).mean(axis=0)  # [A]
    kl_std = gaussian_kl(target_mean, target_std, target_mean, std).mean(axis=0)
    penalty = (jax.lax.stop_gradient(alpha["mean"]) * kl_mean).sum() + (
        jax.lax.stop_gradient(alpha["std"]) * kl_std
    ).sum()
    return likelihood + penalty, {"kl_mean": kl_mean, "kl_std": kl_std}


def alpha_loss(alpha_params: dict[str, jax.Array], kl: dict[str, jax.Array], config: Config):
    """sum_d alpha_d (eps - KL_d) for the mean and std constraints; kl is a constant."""
    alpha = jax.tree_util.tree_map(jax.nn.softplus, alpha_params)
    return (alpha["mean"] * (config.epsilon_mean - kl["kl_mean"])).sum() + (
        alpha["std"] * (config.epsilon_std - kl["kl_std"])
    ).sum()


# ---------------------------------------------------------------- interface


def _softplus_inverse(x: jax.Array) -> jax.Array:
    # Traced: the initial duals are hyperparameters a population may sweep.
    return x + jnp.log(-jnp.expm1(-x))


def check_platform(config: Config) -> None:
    """ValueError if this process cannot run `config`'s dual solver: the scipy solve is a
    `jax.pure_callback`, which needs JAX's CPU backend next to any accelerator."""
    if config.dual_solver != "scipy":
        return
    try:
        jax.devices("cpu")
    except RuntimeError:
        raise ValueError(
            "MPO's scipy dual solver runs on the host through jax.pure_callback, which needs "
            "JAX's CPU backend: add cpu to JAX_PLATFORMS (e.g. JAX_PLATFORMS=cuda,cpu) or use "
            "--dual_solver newton"
        ) from None


def init(
    key: jax.Array, obs_size: int, action_size: int, config: Config, num_envs: int = 1
) -> State:
    """A fresh learner for observations [O] and actions [A] (num_envs: the environments
    stepped together, whose returns `scale_rewards` follows one by one)."""
    actor, critic = _make_networks(config, action_size)
    actor_key, critic_key = jax.random.split(key)
    obs = jnp.zeros((1, obs_size), jnp.float32)
    actor_params = actor.init(actor_key, obs)
    critic_params = critic.init(critic_key, obs, jnp.zeros((1, action_size), jnp.float32))
    alpha_params = {
        "mean": jnp.full((action_size,), _softplus_inverse(config.init_alpha_mean), jnp.float32),
        "std": jnp.full((action_size,), _softplus_inverse(config.init_alpha_std), jnp.float32),
    }
    temperature = jnp.float32(config.init_temperature)
    return State(
        actor_params=actor_params,
        critic_params=critic_params,
        target_actor_params=common.copy(actor_params),
        target_critic_params=common.copy(critic_params),
        actor_opt_state=common.adam_init(actor_params),
        critic_opt_state=common.adam_init(critic_params),
        temperature=temperature,
        temperature_opt_state=common.adam_init(jnp.log(temperature)),
        penalty_temperature=common.copy(temperature),
        penalty_temperature_opt_state=common.adam_init(jnp.log(temperature)),
        alpha_params=alpha_params,
        alpha_opt_state=common.adam_init(alpha_params),
        step=jnp.int32(0),
        obs_stats=common.init_obs_stats(config, obs_size),
        reward_stats=common.init_reward_stats(config, num_envs),
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
    """obs [B, O] (raw) -> the mean if deterministic, else a Gaussian sample, clipped to
    [-1, 1] (its standard-normal draw from `key`, or `noise` [B, A] where given)."""
    actor, _ = _networks(state)
    mean, log_std = actor.apply(state.actor_params, normalization.normalize(state.obs_stats, obs))
    if deterministic:
        return mean
    if noise is None:
        noise = jax.random.normal(key, mean.shape)
    return clip_action(mean + jnp.exp(log_std) * noise)


observe = common.observe


def _new_temperature(
    solver: str,
    learning_rate: jax.Array,
    temperature: jax.Array,
    opt_state: optax.OptState,
    q: jax.Array,
    epsilon: jax.Array,
) -> tuple[jax.Array, optax.OptState]:
    """eta for scores q [B, N] and bound epsilon by `solver`, starting from `temperature`."""
    if solver == "scipy":
        return solve_temperature_scipy(q, temperature, epsilon), opt_state
    if solver == "newton":
        return solve_temperature_newton(q, temperature, epsilon), opt_state
    log_eta = jnp.log(temperature)
    grad = jax.grad(lambda x: _centred_dual(jnp.exp(x), q, epsilon))(log_eta)
    log_eta, opt_state = common.adam_step(log_eta, grad, opt_state, learning_rate)
    return jnp.maximum(jnp.exp(log_eta), MIN_TEMPERATURE), opt_state


def action_penalty(u: jax.Array) -> jax.Array:
    """-sum_a (u - clip(u))^2: u [N, B, A] -> [B, N]; zero for samples inside [-1, 1]."""
    return -jnp.sum((u - clip_action(u)) ** 2, axis=-1).T


def _update_critic(state: State, batch: Transition, key: jax.Array) -> tuple[State, jax.Array]:
    _, _, _, next_q = sample_target_actions(state, batch.next_obs, key)  # [B, N]
    target = batch.reward + state.config.discount * batch.discount * next_q.mean(axis=1)
    loss, grads = jax.value_and_grad(critic_loss)(state.critic_params, state, batch, target)
    params, opt_state = common.adam_step(
        state.critic_params, grads, state.critic_opt_state, state.config.critic_lr,
        project=common.on_sphere(state.config),
    )  # fmt: skip
    return state.replace(critic_params=params, critic_opt_state=opt_state), loss


def _update_policy(state: State, obs: jax.Array, key: jax.Array) -> tuple[State, dict]:
    """E-step (temperature, weights), then the M-step and the KL multipliers."""
    cfg = state.config
    u, target_mean, target_std, q = sample_target_actions(state, obs, key)
    temperature, temperature_opt_state = _new_temperature(
        cfg.dual_solver, cfg.dual_lr, state.temperature, state.temperature_opt_state, q, cfg.epsilon
    )
    # The action penalty (MO-MPO): a second E-step on -|u - clip(u)|^2 with its own
    # temperature; the M-step fits both weightings. Beyond the box every sample
    # scores as its clipped action, so without it the weights favour the whole tail.
    # Its temperature, like the KL multipliers, follows one Adam step on the dual per
    # update whatever `dual_solver` is (as Acme learns all its duals): no second host
    # round trip for "scipy".
    penalty = action_penalty(u)
    penalty_temperature, penalty_opt_state = _new_temperature(
        "adam",
        cfg.dual_lr,
        state.penalty_temperature,
        state.penalty_temperature_opt_state,
        penalty,
        cfg.epsilon_penalty,
    )
    weights = jax.nn.softmax(q / temperature, axis=1) + jax.nn.softmax(
        penalty / penalty_temperature, axis=1
    )
    weights = jax.lax.stop_gradient(weights)  # [B, N]
    alpha = jax.tree_util.tree_map(jax.nn.softplus, state.alpha_params)
    (loss, kl), grads = jax.value_and_grad(policy_loss, has_aux=True)(
        state.actor_params, alpha, state, obs, u, weights, target_mean, target_std
    )
    actor_params, actor_opt_state = common.adam_step(
        state.actor_params, grads, state.actor_opt_state, state.config.actor_lr,
        project=common.on_sphere(state.config),
    )  # fmt: skip
    dual_grads = jax.grad(alpha_loss)(state.alpha_params, kl, state.config)
    alpha_params, alpha_opt_state = common.adam_step(
        state.alpha_params, dual_grads, state.alpha_opt_state, state.config.dual_lr
    )
    metrics = {
        "loss/policy": loss,
        "dual/temperature": temperature,
        "dual/penalty_temperature": penalty_temperature,
        "dual/alpha_mean": alpha["mean"].mean(),
        "dual/alpha_std": alpha["std"].mean(),
        "kl/mean": kl["kl_mean"].sum(),
        "kl/std": kl["kl_std"].sum(),
        "q/target_mean": q.mean(),
        "policy/std": target_std.mean(),  # the target policy's std, mean over states and dims
    }
    state = state.replace(
        actor_params=actor_params,
        actor_opt_state=actor_opt_state,
        temperature=temperature,
        temperature_opt_state=temperature_opt_state,
        penalty_temperature=penalty_temperature,
        penalty_temperature_opt_state=penalty_opt_state,
        alpha_params=alpha_params,
        alpha_opt_state=alpha_opt_state,
    )
    return state, metrics


def update_targets(target: Any, online: Any, state: State) -> Any:
    """The target after update number state.step + 1: Polyak (tau) when
    target_update_period is 0, else the online parameters every period-th update
    and the old target in between (rate 0)."""
    cfg = state.config
    period = jnp.asarray(cfg.target_update_period).astype(jnp.int32)
    periodic = period > 0
    copy = periodic & (jnp.mod(state.step + 1, jnp.maximum(period, 1)) == 0)
    rate = jnp.where(periodic, 0.0, cfg.tau)
    averaged = polyak_update(target, online, rate)
    return jax.tree_util.tree_map(lambda a, o: jnp.where(copy, o, a), averaged, online)


def update(state: State, batch: Transition, key: jax.Array) -> tuple[State, dict[str, jax.Array]]:
    """Critic by TD, then E-step and M-step of the policy, then the targets. batch holds
    raw observations (normalised here with the state's statistics)."""
    batch = common.normalize_batch(state, batch)
    critic_key, policy_key = jax.random.split(key)
    state, loss_critic = _update_critic(state, batch, critic_key)
    state, metrics = _update_policy(state, batch.obs, policy_key)
    state = state.replace(
        target_actor_params=update_targets(state.target_actor_params, state.actor_params, state),
        target_critic_params=update_targets(state.target_critic_params, state.critic_params, state),
        step=state.step + 1,
    )
    return state, {"loss/critic": loss_critic, **metrics}
