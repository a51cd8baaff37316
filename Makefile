# Setup and checks. `make init && make test` on a fresh machine is the whole setup.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: init test lint chaos soak bench bench-peers race bench-critics bench-quick bench-population bench-playground gpu-check results gym-results playground-results dmc-suite tune returns td3-returns mpo-returns plot brax-returns brax-plot brax-seeds brax-seeds-plot clean

init: $(BIN)/activate-done

# The lock file pins every package (pip freeze of a working environment);
# the project itself is installed editable on top, without re-resolving.
$(BIN)/activate-done: requirements.lock requirements-nodeps.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -r requirements-nodeps.lock
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# The suite is mostly XLA compilation, one core per process: two workers on two cores;
# a module's tests stay on one worker (they share its compiled fixtures).
TEST_WORKERS ?= 2
test: init
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope

lint: init
	$(BIN)/ruff check jax_rl tests
	$(BIN)/ruff format --check jax_rl tests
	$(BIN)/mypy

# Faults survived: a run SIGKILLed at random moments (20 kills on the host loop, 10 on the
# device loop), resumed each time, must end bitwise equal to the run left alone; writes
# docs/benchmarks/chaos.md (about 20 minutes on 2 cores; nothing else running).
chaos: init
	$(BIN)/python -m jax_rl.tools.chaos

# SAC on the host loop for 1M steps, resident memory and s / 1000 steps every 50k; writes
# docs/benchmarks/soak.md (2.4 hours on one core of this machine with SAC's dm_control entry
# before CrossQ; about 4 with CrossQ, its entry since commit 0790e78; nothing else running).
soak: init
	$(BIN)/python -m jax_rl.tools.soak

# Seconds per 1000 training steps per learner, then SAC's --preset recipe per 1000 frames as
# one agent and as a 3-agent population beside --preset auto (recipe.md); writes
# docs/benchmarks/.
bench: init
	$(BIN)/python -m jax_rl.tools.benchmark
	$(BIN)/python -m jax_rl.tools.benchmark --recipe 3 --policies SAC

# Optional: the same measurement for Stable-Baselines3 and SBX (not in CI). The peers
# live in their own venv so that the locked one stays as CI installs it.
PEERS_VENV := .venv-peers
bench-peers: $(PEERS_VENV)/bin/peers-done
	$(PEERS_VENV)/bin/python -m jax_rl.tools.bench_peers

# The race (issue 97): our recipe (TD3, --preset auto) against SBX's CrossQ with its defaults
# on HalfCheetah-v5, side by side on one core each, evaluation return against wall-clock
# seconds to 100k steps, seed 0; writes docs/benchmarks/race.{md,json,png}. Narrow or change
# it with RACE_FLAGS, e.g. RACE_FLAGS="--steps 50000" (a reduced race writes to a temporary
# folder; under 25k steps our side needs --flags '--start_timesteps N', its Gymnasium preset
# warming up for 25k) or RACE_FLAGS="--flags '--crossq'". Nothing else should run on the machine.
RACE_FLAGS ?=
race: $(PEERS_VENV)/bin/peers-done
	$(PEERS_VENV)/bin/python -m jax_rl.tools.race $(RACE_FLAGS)

$(PEERS_VENV)/bin/peers-done: requirements.lock pyproject.toml
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install --quiet -r requirements.lock
	$(PEERS_VENV)/bin/pip install --quiet --no-deps --no-build-isolation -e .
	$(PEERS_VENV)/bin/pip install --quiet -c requirements.lock -e ".[peers]"
	touch $@

# Populations on the Brax pipeline: SAC with N = 1, 4, 16 agents in one vmapped program.
bench-population: init
	$(BIN)/python -m jax_rl.tools.benchmark --policies SAC --population 1,4,16

# The device pipeline on MuJoCo Playground tasks beside the host loop on the same tasks.
bench-playground: init
	$(BIN)/python -m jax_rl.tools.benchmark --playground CartpoleSwingup,CheetahRun

# The GPU check (jax_rl/tools/gpu_check.py): speed at the CPU recipe and at the `fast` preset,
# populations of 1/16/64 and TD3 `fast` return against wall-clock time on HumanoidWalk and
# CheetahRun; writes docs/benchmarks/gpu_<device>/ and docs/results/fast_preset/gpu_<device>/.
# Needs JAX with its CUDA plugin in the venv (pip install -e ".[cuda12]"); about 15 minutes
# on one H100 (2026-11-26, commit ca46a6e), 75-90 s per configuration;
# GPU_CHECK_FLAGS="--parts curves" (or speed, populations) runs part of it. GPU_CHECK_FLAGS="--tiny" runs it on a CPU (into a
# temporary folder).
# Issue 50's curve, fast with and without a SimBa critic: GPU_CHECK_FLAGS="--parts curves
# --curve_tasks WalkerRun --curve_configs fast,simba --curve_seconds 300". Compiled programs
# persist in .jax_cache/, so a second command on the same machine skips compiling.
GPU_CHECK_FLAGS ?=
gpu-check: init
	$(BIN)/python -m jax_rl.tools.gpu_check $(GPU_CHECK_FLAGS)

# TD3 and SAC with CrossQ and SimBa critics, at CPU and published widths (writes
# docs/benchmarks/critics.md; about 40 minutes on 2 cores, most of it the published SimBa).
bench-critics: init
	$(BIN)/python -m jax_rl.tools.benchmark --critics --policies TD3,SAC

bench-quick: init
	$(BIN)/python -m jax_rl.tools.benchmark --quick

# The standard DM Control table (docs/results/dmc100k.md): 6 tasks x TD3, SAC, MPO x 3
# seeds, 100k steps, with the presets; a TD3 or SAC cell (CrossQ) takes 55-100 min and an MPO
# cell 100-140 min on the 2-core CPU, about 14 hours in all. Resumable: run it
# again and it skips finished cells (unless a preset or flag has changed their settings since)
# and continues the interrupted one from its checkpoint (in RESULTS_RUNS; keep it where a
# new clone of the work tree does not remove it).
# Narrow it with RESULTS_FLAGS, e.g. RESULTS_FLAGS="--tasks walker-walk --learners SAC".
# RESULTS_FLAGS="--engine ray" trains the cells at once as Ray tasks, one a core, or on a
# cluster with "--engine ray --address HEAD:PORT" (docs/cluster.md).
RESULTS_RUNS ?= runs/results
RESULTS_FLAGS ?=
results: init
	$(BIN)/python -m jax_rl.tools.results --runs_dir $(RESULTS_RUNS) $(RESULTS_FLAGS)

# Gymnasium's HalfCheetah, Hopper, Humanoid, Walker2d and Ant (v5) x SAC, TD3 x 3 seeds at 200k steps
# (docs/results/gym200k.md), beside Tianshou's published figures; resumable like `results`.
gym-results: init
	$(BIN)/python -m jax_rl.tools.results --suite gym --runs_dir $(RESULTS_RUNS) $(RESULTS_FLAGS)

# The same six tasks on MuJoCo Playground (MJX) on the device pipeline
# (docs/results/playground100k.md), TD3/SAC/MPO x 3 seeds, 100k steps; resumable like
# `results`. On a GPU: RESULTS_FLAGS="--seeds 5 --steps 500000" for the longer table.
playground-results: init
	$(BIN)/python -m jax_rl.tools.results --suite playground --runs_dir $(RESULTS_RUNS) $(RESULTS_FLAGS)

# All 28 of dm_control's state tasks x TD3, SAC x 3 seeds at 100k frames (docs/results/dmc28.md),
# beside MR.Q, SimbaV2 and BRO, with each cell's wall time and updates and the mean over the 28;
# resumable like `results`. Long: 56 cells x 3 seeds, and on the 2-core CPU a TD3 or SAC cell
# at 100k frames took 15-141 minutes here (two side by side: humanoid ~1 h, dog ~1.4 h);
# the 56 cells took 66 hours; run it across sittings (RESULTS_FLAGS="--tasks ..." narrows one).
dmc-suite: init
	$(BIN)/python -m jax_rl.tools.results --suite dmc28 --runs_dir $(RESULTS_RUNS) $(RESULTS_FLAGS)

# Hyperparameter search on Optuna (docs/tuning.md): each round's trials train as one vmapped
# population; the study lives in SQLite in TUNE_FLAGS' --study_dir (default
# runs/tune/<study name>), and the same command continues a stopped search. The example space
# (4 rounds of 8 TD3 trials, 50k steps) should take about an hour on the 2-core CPU (an estimate
# from make bench's 1.7 s per 1000 TD3 steps per agent, not measured).
# TUNE_FLAGS="--engine ray --address HEAD:PORT" spreads each round's populations over a cluster;
# TUNE_FLAGS="--set study.rounds=8" overrides a key of the space file.
SPACE ?= docs/examples/tune_cartpole.toml
TUNE_FLAGS ?=
tune: init
	$(BIN)/python -m jax_rl.tools.tune $(SPACE) $(TUNE_FLAGS)

# The closing figures of the foundation issue: 3 seeds x TD3, SAC on cartpole-swingup, 100k steps,
# with the published defaults (no preset).
returns: init
	for seed in 0 1 2; do for policy in TD3 SAC; do \
	  rm -rf docs/results/cartpole_swingup/$$policy-seed$$seed; \
	  $(BIN)/python jax_rl/main_dm_control.py --policy $$policy --seed $$seed --preset paper \
	    --max_timesteps 100000 --no_progress \
	    --save_dir docs/results/cartpole_swingup/$$policy-seed$$seed || exit 1; \
	done; done
	$(MAKE) plot

# MPO's best cartpole-swingup configuration (its dm_control preset, spelled out): 3 seeds in
# one vmapped run, 100k steps, about 100 minutes on the 2-core CPU. An interrupted
# run continues from its last checkpoint with the same command plus
# --resume runs/mpo-returns.
mpo-returns: init
	$(BIN)/python jax_rl/main_dm_control.py --policy MPO --num_seeds 3 --seed 0 --n_step 5 \
	  --target_update_period 100 --input_layer layernorm --epsilon_std 1e-5 \
	  --max_timesteps 100000 --checkpoint_every 5000 --no_progress --save_dir runs/mpo-returns

# TD3's cartpole-swingup configuration that reaches 800 on every seed at 100k steps
# (docs/results/README.md): the published TD3 with its exploration std falling from 0.5
# to 0.1 over the first 30k updates; 6 seeds, one after another (three 100k-step TD3 runs
# sharing the 2 cores took about 15 minutes each).
td3-returns: init
	for seed in 0 1 2 3 4 5; do \
	  rm -rf docs/results/cartpole_swingup_td3_explore/TD3-decay30k-from0.5-seed$$seed; \
	  $(BIN)/python jax_rl/main_dm_control.py --policy TD3 --seed $$seed --preset paper \
	    --exploration_decay 30000 --initial_exploration_noise 0.5 \
	    --max_timesteps 100000 --no_progress \
	    --save_dir docs/results/cartpole_swingup_td3_explore/TD3-decay30k-from0.5-seed$$seed || exit 1; \
	done

plot: init
	$(BIN)/python -m jax_rl.watch.plot docs/results/cartpole_swingup --out docs/results/cartpole_swingup.png --band range \
	  --title "dm_control cartpole-swingup"

# The device pipeline's default run (halfcheetah, positional backend), 3 seeds x TD3, SAC.
brax-returns: init
	for seed in 0 1 2; do for policy in TD3 SAC; do \
	  rm -rf docs/results/brax_halfcheetah/$$policy-seed$$seed; \
	  $(BIN)/python jax_rl/main_brax.py --policy $$policy --seed $$seed --no_progress \
	    --save_dir docs/results/brax_halfcheetah/$$policy-seed$$seed || exit 1; \
	done; done
	$(MAKE) brax-plot

brax-plot: init
	$(BIN)/python -m jax_rl.watch.plot docs/results/brax_halfcheetah --out docs/results/brax_halfcheetah.png --band range \
	  --title "Brax halfcheetah (positional), device pipeline"

# Five seeds of each learner in one vmapped run each, on the default Brax environment.
brax-seeds: init
	for policy in TD3 SAC MPO; do \
	  rm -rf docs/results/brax_halfcheetah_5seeds/$$policy; \
	  $(BIN)/python jax_rl/main_brax.py --policy $$policy --num_seeds 5 --no_progress \
	    --save_dir docs/results/brax_halfcheetah_5seeds/$$policy || exit 1; \
	done
	$(MAKE) brax-seeds-plot

brax-seeds-plot: init
	$(BIN)/python -m jax_rl.watch.plot docs/results/brax_halfcheetah_5seeds \
	  --out docs/results/brax_halfcheetah_5seeds.png \
	  --title "Brax halfcheetah (positional), 5 seeds per learner in one vmapped run"

clean:
	rm -rf $(VENV) $(PEERS_VENV) .pytest_cache .mypy_cache .ruff_cache
