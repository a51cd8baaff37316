#!/usr/bin/env bash
# Start or continue the recipe's two lines of training (issue 97, docs/recipe.md), one
# process each, from the repository root: `bash docs/results/recipe/continue.sh [RUNS]`.
# Both are the results tool's own commands, so each cell continues from its last
# checkpoint (every 10k frames or steps) when RUNS (default /work/runs/recipe) survived,
# and starts from nothing when it did not. Logs: RUNS/tbl.log and RUNS/R13gym.log.
#
# 1. R13's confirmation with 3 seeds as the recipe table's own cells, panel first, in the
#    order written before it ran (docs/recipe.md, "R13's confirmation with 3 seeds").
# 2. R13's seed-0 screen on Ant-v5, the panel's last seed-0 cell (Humanoid-v5's is done:
#    docs/results/recipe/sac-R13), with the flags the Humanoid-v5 screen ran
#    (`--preset recipe`'s Gymnasium settings written out, as the screens before the preset
#    ran them).
set -euo pipefail
runs=${1:-/work/runs/recipe}
python=${PYTHON:-.venv/bin/python}
mkdir -p "$runs/tbl"
r13_gym="--crossq --policy_freq 3 --adam_beta1 0.5 --actor_lr 1e-3 --critic_lr 1e-3 \
--alpha_lr 3e-4 --start_timesteps 5000 --representation sale --encoder_hidden_sizes 128,128 \
--embedding_size 128 --init_alpha 0.1 --noise_color 1 --hold_exploration \
--exploration_share 0.1 --share_horizon 3"

nohup nice -n 5 "$python" -m jax_rl.tools.results --suite dmc28 --learners SAC \
    --preset recipe --tasks cartpole-swingup_sparse,walker-run,cheetah-run,finger-spin \
    --runs_dir "$runs/tbl" --checkpoint_every 10000 >> "$runs/tbl.log" 2>&1 &
nohup nice -n 10 "$python" -m jax_rl.tools.results --suite gym --tasks Ant-v5 \
    --learners SAC --seeds 1 --runs_dir "$runs/sac-R13" --out "$runs/out-R13gym" \
    --checkpoint_every 10000 --flags "$r13_gym" >> "$runs/R13gym.log" 2>&1 &
echo "started; tail -f $runs/tbl.log $runs/R13gym.log"
