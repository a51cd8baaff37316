"""Tiny networks (one hidden unit) with hand-set weights, so losses can be computed by hand.

Critic member e:  Q_e(s, a) = w_e * (a + 2) + c_e   for a in [-1, 1]
  (hidden unit = relu(a + 2) = a + 2; the observation is ignored).
Deterministic actor:  pi(s) = tanh(b)  (all kernels zero).
Gaussian actor:  mean = m, log_std = l  (all kernels zero).
"""

import jax.numpy as jnp
import numpy as np

OBS_SIZE = 2
ACTION_SIZE = 1


def critic_params(w: list[float], c: list[float]) -> dict:
    members = len(w)
    kernel0 = np.zeros((members, OBS_SIZE + ACTION_SIZE, 1), np.float32)
    kernel0[:, OBS_SIZE, 0] = 1.0  # the action's input
    return {
        "params": {
            "members": {
                "MLP_0": {
                    "Dense_0": {
                        "kernel": jnp.asarray(kernel0),
                        "bias": jnp.full((members, 1), 2.0),
                    },
                    "Dense_1": {
                        "kernel": jnp.asarray(np.array(w, np.float32).reshape(members, 1, 1)),
                        "bias": jnp.asarray(np.array(c, np.float32).reshape(members, 1)),
                    },
                }
            }
        }
    }


def critic_values(w: list[float], c: list[float], action: np.ndarray) -> np.ndarray:
    """[E, B] for actions [B, 1]."""
    return np.stack([wi * (action[:, 0] + 2.0) + ci for wi, ci in zip(w, c, strict=False)])


def constant_actor_params(bias: list[float]) -> dict:
    out = len(bias)
    return {
        "params": {
            "MLP_0": {
                "Dense_0": {"kernel": jnp.zeros((OBS_SIZE, 1)), "bias": jnp.zeros((1,))},
                "Dense_1": {"kernel": jnp.zeros((1, out)), "bias": jnp.asarray(bias, jnp.float32)},
            }
        }
    }
