"""The learner settings the two cost scripts time: SAC's CrossQ entry, SALE at 128 and
R13's share parts (docs/recipe.md, R13), as Config and loop overrides."""

from jax_rl.tools import benchmark as b

entry = {**b.CROSSQ_ENTRY, "alpha_lr": 1e-3}
sale = {"representation": "sale", "encoder_hidden_sizes": (128, 128), "embedding_size": 128}
share = {
    "init_alpha": 0.1,
    "alpha_lr": 3e-4,
    "hold_exploration": True,
    "exploration_share": 0.1,
    "share_horizon": 3,
}
# R13 on DM Control: K = 2, U = 2, pink noise.
r13_dmc = {**entry, **sale, **share, "noise_color": 1.0, "action_repeat": 2, "updates_per_step": 2}
