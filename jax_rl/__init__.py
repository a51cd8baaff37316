"""jax_rl: off-policy continuous-control learners (TD3, SAC, MPO) written end to end in JAX."""

__version__ = "0.1.0"
