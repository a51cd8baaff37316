"""Presets: resolution order, the shipped files, and refusals of bad ones at start-up."""

import dataclasses
import importlib
import re
from pathlib import Path

import pytest

from jax_rl.main_dm_control import DMControlBackend
from jax_rl.main_dm_control import build_parser as dm_parser
from jax_rl.run import cli, driver, presets

ROOT = Path(__file__).resolve().parent.parent
# The entry point whose flags a backend's presets must be settings of.
ENTRY_POINTS = {
    "dm_control": ("jax_rl.main_dm_control", "DMControlBackend"),
    "brax": ("jax_rl.main_brax", "BraxBackend"),
    "playground": ("jax_rl.main_brax", "BraxBackend"),
    "gymnasium": ("jax_rl.main_gym", "GymnasiumBackend"),
}


@pytest.fixture
def preset_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(presets, "PRESET_DIR", tmp_path)
    return tmp_path


def write(folder, policy, text):
    (folder / f"{policy.lower()}.toml").write_text(text)


TABLES = """
[named."tuned/dm_control/cartpole-swingup"]
evidence = "docs/results/a"
n_step = 3

[task."dm_control/*"]
evidence = "docs/results/b"
n_step = 5

[named.wide]
evidence = "docs/results/c"
hidden_sizes = [512, 512]
"""


def test_auto_takes_the_backend_entry_on_every_task_and_tuned_the_tasks_own(preset_dir):
    write(preset_dir, "SAC", TABLES)
    for task in ("cartpole-swingup", "walker-walk"):  # a tuned entry or none: the same
        wildcard = presets.resolve("SAC", "dm_control", task)
        assert (wildcard.name, wildcard.settings, wildcard.evidence) == (
            "dm_control/*", {"n_step": 5}, "docs/results/b"
        )  # fmt: skip
        assert wildcard.instead_of is None
    assert presets.resolve("SAC", "brax", "halfcheetah") is None
    assert presets.resolve("TD3", "dm_control", "walker-walk") is None  # no file: no preset
    # --preset tuned: the task's own entry, else the backend's, saying it ran instead.
    own = presets.resolve("SAC", "dm_control", "cartpole-swingup", presets.TUNED)
    assert (own.name, own.settings, own.instead_of) == (
        "tuned/dm_control/cartpole-swingup", {"n_step": 3}, None
    )  # fmt: skip
    instead = presets.resolve("SAC", "dm_control", "walker-walk", presets.TUNED)
    assert (instead.name, instead.settings, instead.instead_of) == (
        "dm_control/*", {"n_step": 5}, "tuned"
    )  # fmt: skip
    assert presets.resolve("SAC", "brax", "halfcheetah", presets.TUNED) is None


def test_a_task_entry_in_the_defaults_is_refused(preset_dir):
    write(preset_dir, "SAC", TABLES + '[task."dm_control/walker-walk"]\nevidence = "a"\n')
    with pytest.raises(presets.PresetError, match=(
        "sac.toml: task entries in the defaults \\(dm_control/walker-walk\\); a setting "
        'chosen on one task goes under \\[named."tuned/BACKEND/TASK"\\]'
    )):  # fmt: skip
        presets.resolve("SAC", "dm_control", "cheetah-run")


def test_a_wildcard_entry_names_the_tasks_it_was_tuned_on_and_the_rest_are_held_out(
    preset_dir,
):
    write(preset_dir, "SAC", TABLES.replace("n_step = 5", 'n_step = 5\ntuned_on = ["cheetah-run"]'))
    wildcard = presets.resolve("SAC", "dm_control", "walker-walk")
    assert wildcard.tuned_on == ("cheetah-run",) and "tuned_on" not in wildcard.settings
    assert wildcard.tuned_for("cheetah-run") and not wildcard.tuned_for("walker-walk")
    task_entry = presets.resolve("SAC", "dm_control", "cartpole-swingup", presets.TUNED)
    assert task_entry.tuned_for("cartpole-swingup") and not task_entry.tuned_for("walker-walk")
    text = '[named."tuned/dm_control/walker-walk"]\nevidence = "a"\ntuned_on = ["x"]'
    write(preset_dir, "TD3", text)
    with pytest.raises(presets.PresetError, match="only a backend's `\\*` entry"):
        presets.resolve("TD3", "dm_control", "walker-walk", presets.TUNED)
    write(preset_dir, "MPO", '[task."dm_control/*"]\nevidence = "a"\ntuned_on = "cheetah-run"')
    with pytest.raises(presets.PresetError, match="tuned_on must be a list"):
        presets.resolve("MPO", "dm_control", "walker-walk")


def test_paper_takes_none_and_a_name_takes_its_table(preset_dir):
    write(preset_dir, "SAC", TABLES)
    assert presets.resolve("SAC", "dm_control", "cartpole-swingup", presets.PAPER) is None
    wide = presets.resolve("SAC", "dm_control", "cartpole-swingup", "wide")
    assert wide.settings == {"hidden_sizes": [512, 512]}
    # An entry can be chosen by its full name for another task or backend.
    other = presets.resolve("SAC", "dm_control", "walker-walk", "tuned/dm_control/cartpole-swingup")
    assert other.settings == {"n_step": 3}
    assert presets.resolve("SAC", "brax", "ant", "dm_control/*").settings == {"n_step": 5}


def test_a_task_entry_starts_from_its_base_recipe_and_its_own_keys_win(preset_dir):
    # One recipe written once ([named.NAME]) and taken by several task entries (`base`),
    # under --preset auto and by the entry's full name; the entry keeps its own evidence.
    write(preset_dir, "SAC", TABLES + """
[named.explore]
evidence = "docs/results/d"
n_step = 3
noise_color = 1.0

[named."tuned/dm_control/finger-spin"]
base = "explore"
evidence = "docs/results/e"
noise_color = 0.5
""")  # fmt: skip
    entry = presets.resolve("SAC", "dm_control", "finger-spin", presets.TUNED)
    assert (entry.name, entry.evidence) == ("tuned/dm_control/finger-spin", "docs/results/e")
    assert entry.settings == {"n_step": 3, "noise_color": 0.5} and entry.tuned_for("finger-spin")
    by_name = presets.resolve("SAC", "dm_control", "walker-walk", "tuned/dm_control/finger-spin")
    assert by_name.settings == entry.settings
    text = '[named."tuned/dm_control/x"]\nbase = "gone"\nevidence = "a"\n'
    write(preset_dir, "SAC", TABLES + text)
    with pytest.raises(presets.PresetError, match="base 'gone' is not a named preset"):
        presets.resolve("SAC", "dm_control", "x", presets.TUNED)


def test_a_base_may_have_a_base_of_its_own_and_the_nearest_key_wins(preset_dir):
    chain = """
[named.explore]
evidence = "docs/results/d"
n_step = 3
noise_color = 1.0
actor_lr = 1e-3

[named.explore-slow]
base = "explore"
evidence = "docs/results/f"
actor_lr = 3e-4

[named."tuned/dm_control/pendulum-swingup"]
base = "explore-slow"
evidence = "docs/results/g"
noise_color = 2.0
"""
    write(preset_dir, "TD3", TABLES + chain)
    entry = presets.resolve("TD3", "dm_control", "pendulum-swingup", presets.TUNED)
    assert entry.settings == {"n_step": 3, "noise_color": 2.0, "actor_lr": 3e-4}
    assert entry.evidence == "docs/results/g"  # each preset's evidence is its own
    slow = presets.resolve("TD3", "dm_control", "walker-walk", "explore-slow")
    assert slow.settings == {"n_step": 3, "noise_color": 1.0, "actor_lr": 3e-4}
    circle = chain.replace('evidence = "docs/results/d"', 'base = "explore-slow"\nevidence = "d"')
    write(preset_dir, "TD3", TABLES + circle)
    with pytest.raises(presets.PresetError, match=(
        "preset 'explore-slow': its bases go round in a circle "
        "\\(explore-slow -> explore -> explore-slow\\)"
    )):  # fmt: skip
        presets.resolve("TD3", "dm_control", "walker-walk", "explore-slow")


def test_unknown_name_lists_the_choices(preset_dir):
    write(preset_dir, "SAC", TABLES)
    choices = "auto, paper, tuned, wide, dm_control/\\*$"
    with pytest.raises(
        presets.PresetError, match=f"unknown preset 'bogus' for SAC; choose from {choices}"
    ):
        presets.resolve("SAC", "dm_control", "cartpole-swingup", "bogus")


@pytest.mark.parametrize(
    "text, message",
    [
        ('[task."dm_control/*"]\nn_step = 5\n', "names no evidence"),
        ("[tasks.x]\nevidence = 'a'\n", "unknown table\\(s\\) tasks"),
        ("[task\n", "not valid TOML"),
    ],
)
def test_malformed_files_are_refused(preset_dir, text, message):
    write(preset_dir, "MPO", text)
    with pytest.raises(presets.PresetError, match=message):
        presets.resolve("MPO", "dm_control", "cartpole-swingup")


def shipped():
    return [(policy, p) for policy in ("TD3", "SAC", "MPO") for p in presets.all_presets(policy)]


@pytest.mark.parametrize("policy, preset", shipped(), ids=lambda x: getattr(x, "name", x))
def test_every_shipped_preset_is_a_valid_setting_of_its_entry_point(policy, preset):
    parts = preset.name.split("/")  # BACKEND/TASK, NAME/BACKEND/TASK or NAME
    backend = parts[-2] if len(parts) > 1 else "dm_control"
    module, backend_class = ENTRY_POINTS[backend]
    entry = importlib.import_module(module)
    parser = entry.build_parser()
    argv = ["--policy", policy]
    args = parser.parse_args(argv)
    applied = driver.apply_preset(parser, args, preset, driver.explicit_flags(parser, argv))
    assert applied == preset.settings
    folder = re.match(r"docs/results/[\w.-]+", preset.evidence)  # the evidence is committed
    assert folder and (ROOT / folder.group()).is_dir(), preset.evidence
    _, config, _ = cli.build_algo_config(args)  # every value is one the learner takes
    backend = getattr(entry, backend_class)()
    loop = cli.build_loop_config(backend.loop_config_class, args, **backend.loop_fields(args))
    fields = {**dataclasses.asdict(config), **dataclasses.asdict(loop)}
    for key, value in preset.settings.items():
        if key in fields:
            expected = tuple(value) if isinstance(value, list) else value
            assert fields[key] == expected, key


def test_mpo_and_td3_resolve_their_dm_control_presets_and_sac_its_playground_one():
    mpo = presets.resolve("MPO", "dm_control", "walker-walk")
    assert mpo.name == "dm_control/*" and mpo.settings["n_step"] == 5
    td3 = presets.resolve("TD3", "dm_control", "hopper-stand")
    crossq = {"crossq": True, "policy_freq": 3, "adam_beta1": 0.5, "actor_lr": 1e-3}
    crossq |= {"critic_lr": 1e-3, "start_timesteps": 5000}  # 256-256: the default widths
    assert td3.settings == crossq
    assert td3.name == "dm_control/*" and td3.tuned_for("cheetah-run")
    assert not td3.tuned_for("hopper-stand")
    # TD3's tuned entries of the two cartpole swing-ups take the named `explore` recipe
    # (`base`): the suite entry with action repeat 2, 2 updates per decision, held pink noise
    # and 3-step returns.
    explore = presets.resolve("TD3", "dm_control", "walker-walk", choice="explore")
    assert explore.name == "explore" and explore.settings == {
        **crossq, "action_repeat": 2, "updates_per_step": 2, "noise_color": 1.0,
        "hold_exploration": True, "initial_exploration_noise": 1.0,
        "exploration_decay": 20000, "n_step": 3,
    }  # fmt: skip
    explored = ("cartpole-swingup", "cartpole-swingup_sparse", "finger-turn_easy")
    for task in (*explored, "finger-turn_hard"):
        entry = presets.resolve("TD3", "dm_control", task, presets.TUNED)
        assert entry.name == f"tuned/dm_control/{task}" and entry.tuned_for(task)
        assert entry.settings == explore.settings and entry.evidence != explore.evidence
    # The entries whose own keys win over the recipe's: red noise where only it meets the
    # swing-up, the slower actor (3e-4) where it kept the found reward, and on pendulum an
    # exploration std starting at 2, wide enough to outweigh an actor that knows little
    # (the slower actor through `explore-slow`, a base with `explore` as its own base).
    slower, red = {"actor_lr": 3e-4}, {"noise_color": 2.0}
    wide = {"initial_exploration_noise": 2.0}
    own = {"acrobot-swingup": red | slower, "pendulum-swingup": red | slower | wide}
    kept = (
        "cartpole-balance_sparse", "cartpole-balance", "ball_in_cup-catch", "reacher-easy",
        "walker-stand", "fish-swim", "hopper-hop",
    )  # fmt: skip
    own |= dict.fromkeys(kept, slower)
    for task, settings in own.items():
        entry = presets.resolve("TD3", "dm_control", task, presets.TUNED)
        assert entry.name == f"tuned/dm_control/{task}" and entry.tuned_for(task)
        assert entry.settings == {**explore.settings, **settings}
        assert presets.resolve("TD3", "dm_control", task).settings == td3.settings  # auto
    assert presets.resolve("TD3", "dm_control", "hopper-stand").name == "dm_control/*"
    untuned = presets.resolve("TD3", "dm_control", "hopper-stand", presets.TUNED)
    assert untuned.name == "dm_control/*" and untuned.instead_of == presets.TUNED
    held_out = presets.resolve("TD3", "dm_control", "walker-run")  # a task no one tuned on
    assert held_out.settings == td3.settings and not held_out.tuned_for("walker-run")
    sac_dmc = presets.resolve("SAC", "dm_control", "cartpole-swingup")
    assert sac_dmc.name == "dm_control/*" and sac_dmc.settings == {**crossq, "alpha_lr": 1e-3}
    # SAC's `explore`: TD3's loop and exploration parts, its temperature held at 0.1 and then
    # stepped at the published rate; its sparse swing-up takes it.
    sac_explore = presets.resolve("SAC", "dm_control", "cartpole-swingup_sparse", "tuned")
    assert sac_explore.name == "tuned/dm_control/cartpole-swingup_sparse"
    assert sac_explore.settings == {
        **crossq, "alpha_lr": 3e-4, "init_alpha": 0.1, "action_repeat": 2,
        "updates_per_step": 2, "noise_color": 1.0, "hold_exploration": True, "n_step": 3,
    }  # fmt: skip
    named = presets.resolve("SAC", "dm_control", "walker-walk", choice="explore")
    assert named.settings == sac_explore.settings
    assert sac_dmc.tuned_for("walker-walk") and not sac_dmc.tuned_for("finger-turn_easy")
    # Tuned, ball_in_cup-catch keeps the published SAC, which measured higher than the entry
    # before CrossQ.
    sac_cup = presets.resolve("SAC", "dm_control", "ball_in_cup-catch", presets.TUNED)
    assert sac_cup.name == "tuned/dm_control/ball_in_cup-catch" and sac_cup.settings == {
        "init_alpha": 1.0
    }
    sac = presets.resolve("SAC", "playground", "CartpoleSwingup", presets.TUNED)
    assert sac.name == "tuned/playground/CartpoleSwingup" and sac.settings == {"init_alpha": 0.1}
    assert presets.resolve("SAC", "playground", "CartpoleSwingup") is None
    assert presets.resolve("SAC", "playground", "WalkerWalk", presets.TUNED) is None


def test_each_learners_gymnasium_suite_entry_carries_tianshous_settings():
    sac = presets.resolve("SAC", "gymnasium", "Ant-v5")
    assert sac.name == "gymnasium/*" and not sac.tuned_for("Ant-v5")
    assert sac.settings == {
        "actor_lr": 1e-3, "critic_lr": 1e-3, "start_timesteps": 10000, "init_alpha": 0.2,
        "alpha_lr": 0.0, "layer_init": "pytorch",
    }  # fmt: skip
    assert presets.resolve("SAC", "gymnasium", "Hopper-v5").tuned_for("Hopper-v5")
    td3 = presets.resolve("TD3", "gymnasium", "Walker2d-v5")
    assert td3.name == "gymnasium/*" and td3.settings["start_timesteps"] == 25000
    assert td3.tuned_for("HalfCheetah-v5") and not td3.tuned_for("Walker2d-v5")
    assert presets.resolve("TD3", "gymnasium", "Hopper-v5").name == "gymnasium/*"
    hopper = presets.resolve("TD3", "gymnasium", "Hopper-v5", presets.TUNED)
    assert hopper.name == "tuned/gymnasium/Hopper-v5"
    assert hopper.settings == {"actor_lr": 1e-3, "critic_lr": 1e-3, "start_timesteps": 1000}


@pytest.mark.parametrize("policy", ["TD3", "SAC"])
def test_every_dm_control_and_gymnasium_task_resolves_to_its_backends_one_entry(policy):
    # The defaults are one recipe per backend (issue 97): over all 28 DM Control tasks and
    # the 5 Gymnasium ones, --preset auto gives the same settings, and no task entry.
    from jax_rl.tools.results import SUITES

    tasks = {"dm_control": SUITES["dmc28"].tasks, "gymnasium": SUITES["gym"].tasks}
    assert (len(tasks["dm_control"]), len(tasks["gymnasium"])) == (28, 5)
    for backend, names in tasks.items():
        resolved = [presets.resolve(policy, backend, task) for task in names]
        assert {p.name for p in resolved} == {f"{backend}/*"}
        assert all(p.settings == resolved[0].settings for p in resolved)
    assert not [k for k in presets.load_file(policy)["task"] if not k.endswith("/*")]


# R13 of docs/recipe.md as its screens ran it, on the command line over `--preset auto`.
R13_FLAGS = (
    "--crossq --policy_freq 3 --adam_beta1 0.5 --actor_lr 1e-3 --critic_lr 1e-3 --alpha_lr 3e-4 "
    "--start_timesteps 5000 --representation sale --encoder_hidden_sizes 128,128 "
    "--embedding_size 128 --init_alpha 0.1 --noise_color 1 --hold_exploration "
    "--exploration_share 0.1 --share_horizon 3"
).split()
PROTOCOL = {"dm_control": ["--action_repeat", "2", "--updates_per_step", "2"], "gymnasium": []}


def test_the_candidate_recipe_is_one_learner_on_all_33_tasks_and_differs_only_in_protocol():
    # `--preset recipe` (issue 97): the same learner settings on all 28 DM Control and 5
    # Gymnasium tasks; the backends differ only in action repeat, with one update per frame
    # on both (U = K).
    from jax_rl.tools.results import SUITES

    tasks = {"dm_control": SUITES["dmc28"].tasks, "gymnasium": SUITES["gym"].tasks}
    protocol = {"action_repeat", "updates_per_step"}
    learner = {}
    for backend, names in tasks.items():
        resolved = [presets.resolve("SAC", backend, task, "recipe") for task in names]
        assert {p.name for p in resolved} == {f"recipe/{backend}/*"}
        assert all(p.settings == resolved[0].settings for p in resolved)
        settings = resolved[0].settings
        repeat = settings.get("action_repeat", 1)
        assert settings.get("updates_per_step", 1) == repeat == {"dm_control": 2}.get(backend, 1)
        learner[backend] = {k: v for k, v in settings.items() if k not in protocol}
    assert (
        learner["dm_control"]
        == learner["gymnasium"]
        == presets.resolve("SAC", "dm_control", "walker-run", "r13").settings
    )


@pytest.mark.parametrize("backend", ["dm_control", "gymnasium"])
def test_the_candidate_recipe_runs_the_settings_its_screens_ran(backend, tmp_path):
    # What R13's screens set as flags over each backend's `*` entry, `--preset recipe` sets
    # alone: every learner and loop field the same, but the Gymnasium entry's layer_init,
    # which BatchRenorm networks and SALE's encoders do not read (the next test).
    from jax_rl import main_gym

    parser, backend_ = {
        "dm_control": (dm_parser(), DMControlBackend()),
        "gymnasium": (main_gym.build_parser(), main_gym.GymnasiumBackend()),
    }[backend]
    base = ["--policy", "SAC", "--save_dir", str(tmp_path / "run")]
    screened = driver.resolve_settings(parser, backend_, [*base, *R13_FLAGS, *PROTOCOL[backend]])
    preset = driver.resolve_settings(parser, backend_, [*base, "--preset", "recipe"])
    assert preset.preset.name == f"recipe/{backend}/*"
    ran, made = dataclasses.asdict(screened.algo_config), dataclasses.asdict(preset.algo_config)
    if backend == "gymnasium":
        assert (ran.pop("layer_init"), made.pop("layer_init")) == ("pytorch", "lecun")
    assert ran == made
    assert dataclasses.asdict(screened.loop_config) == dataclasses.asdict(preset.loop_config)


def test_layer_init_changes_no_bit_of_the_candidate_recipe():
    # Its Gymnasium screens ran with the `gymnasium/*` entry's pytorch init under the flags;
    # the recipe leaves SAC's lecun default. Trained on the fingerprints' stream, the two end
    # bit for bit the same.
    import fingerprints  # tests/fingerprints.py, beside this file

    config = dict(fingerprints.cases("SAC"))["preset recipe/gymnasium/*"]
    assert config.layer_init == "lecun"
    pytorch = config.replace(layer_init="pytorch")
    assert fingerprints.run("SAC", config) == fingerprints.run("SAC", pytorch)


def test_a_named_preset_without_an_entry_for_the_backend_says_which_it_has():
    with pytest.raises(presets.PresetError, match=r"preset 'recipe' of sac.toml has no entry "
                       r"for playground/CartpoleSwingup; it has entries for dm_control/\*, "
                       r"gymnasium/\*"):  # fmt: skip
        presets.resolve("SAC", "playground", "CartpoleSwingup", "recipe")


def settings_of(argv):
    return driver.resolve_settings(dm_parser(), DMControlBackend(), argv)


def test_the_users_flags_win_over_the_preset_and_the_record_says_so(tmp_path):
    base = ["--policy", "MPO", "--save_dir", str(tmp_path / "run")]
    s = settings_of([*base, "--n_step", "2"])
    assert s.loop_config.n_step == 2  # the user's flag
    assert s.algo_config.target_update_period == 100  # the preset
    assert s.algo_config.input_layer == "layernorm"
    record = s.preset_record()
    assert record["name"] == "dm_control/*" and record["overridden_by_flags"] == ["n_step"]
    assert "n_step" not in record["applied"] and record["applied"]["epsilon_std"] == 1e-5
    assert s.resolution() == (
        "MPO defaults -> preset dm_control/* (target_update_period=100, input_layer=layernorm, "
        "epsilon_std=1e-05) -> your flags (--n_step 2)"
    )
    paper = settings_of([*base, "--preset", "paper"])
    assert paper.preset is None and paper.loop_config.n_step == 1
    assert paper.resolution() == "MPO defaults (preset: paper)"


def test_the_start_up_line_and_config_name_every_setting_the_user_gave(tmp_path):
    # Not only those that override the preset: run flags and sweeps too; the task, the
    # seeds and the paths are not settings.
    argv = ["--policy", "SAC", "--domain_name", "ball_in_cup", "--task_name", "catch"]
    argv += ["--num_seeds", "2", "--save_dir", str(tmp_path / "run"), "--init_alpha", "0.1"]
    argv += ["--hidden_sizes", "64,64", "--max_timesteps", "30000", "--actor_lr", "1e-3,3e-4"]
    s = settings_of(argv)
    assert s.user_flags == {
        "actor_lr": [1e-3, 3e-4],
        "hidden_sizes": (64, 64),
        "init_alpha": 0.1,
        "max_timesteps": 30000,
    }
    # The task's tuned preset sets nothing the flags leave: it says so.
    assert settings_of([*argv, "--preset", "tuned"]).resolution() == (
        "SAC defaults -> preset tuned/dm_control/ball_in_cup-catch (nothing) -> your flags "
        "(--actor_lr 0.001,0.0003, --hidden_sizes 64,64, --init_alpha 0.1, --max_timesteps "
        "30000)"
    )
    assert settings_of([*argv[:8], "--preset", "tuned"]).resolution() == (
        "SAC defaults -> preset tuned/dm_control/ball_in_cup-catch (init_alpha=1.0)"
    )
    paper = settings_of([*argv[:8], "--preset", "paper"])
    assert paper.resolution() == "SAC defaults (preset: paper)"


def test_a_settings_error_names_the_preset_settings_it_mentions_and_no_others():
    applied = {"crossq": True, "critic_lr": 1e-3}
    preset = presets.Preset("dm_control/*", presets.preset_file("SAC"), "docs", applied)
    origin = driver.preset_origin(preset, applied)
    assert origin("SAC tau must be in [0, 1], got 2") == ""
    assert origin("SAC critic must be one of scalar, categorical") == ""  # not critic_lr
    assert origin("SAC crossq takes the scalar critic, got critic 'categorical'") == (
        " (crossq=True: from preset dm_control/* (jax_rl/presets/sac.toml); a flag of yours "
        "wins over it, --preset paper takes no preset)"
    )


def test_tuned_on_a_task_it_has_no_entry_for_says_the_recipe_ran(tmp_path):
    argv = ["--policy", "TD3", "--domain_name", "walker", "--task_name", "run"]
    s = settings_of([*argv, "--save_dir", str(tmp_path / "run"), "--preset", "tuned"])
    assert s.preset.name == "dm_control/*" and s.algo_config.crossq
    assert s.resolution() == (
        "TD3 defaults -> preset dm_control/* (crossq=True, policy_freq=3, adam_beta1=0.5, "
        "actor_lr=0.001, critic_lr=0.001, start_timesteps=5000) (--preset tuned has no entry "
        "for walker-run: the dm_control/* recipe, as --preset auto, ran)"
    )
    assert s.preset_record()["instead_of"] == "tuned"
    auto = settings_of([*argv, "--save_dir", str(tmp_path / "auto")])
    assert "instead_of" not in auto.preset_record()


def test_a_run_of_a_task_entry_from_before_they_left_the_defaults_is_told_where_it_went():
    assert presets.moved_to("TD3", "dm_control/cartpole-swingup") == presets.TUNED
    assert presets.moved_to("TD3", "gymnasium/Hopper-v5") == presets.TUNED
    assert presets.moved_to("TD3", "dm_control/*") is None
    assert presets.moved_to("TD3", "dm_control/walker-run") is None  # never had one
    assert presets.moved_to("TD3", "explore") is None


def test_a_task_without_a_preset_says_so_on_start_up(preset_dir, tmp_path):
    write(preset_dir, "SAC", TABLES.replace('"dm_control/*"', '"gymnasium/*"'))
    argv = ["--policy", "SAC", "--domain_name", "ball_in_cup", "--task_name", "catch"]
    s = settings_of([*argv, "--save_dir", str(tmp_path / "run"), "--init_alpha", "0.1"])
    assert s.preset is None and s.algo_config.init_alpha == 0.1
    assert (
        s.resolution()
        == "SAC defaults (preset: none for this task) -> your flags (--init_alpha 0.1)"
    )


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"not_a_flag": 1}, "'not_a_flag' is not a setting of this entry point"),
        ({"seed": 3}, "'seed' is not a setting of this entry point"),
        ({"n_step": "five"}, "bad value for n_step"),
        ({"actor_lr": "inf"}, "bad value for actor_lr"),
        ({"input_layer": "batchnorm"}, "MPO input_layer must be one of"),
        ({"epsilon_std": -1.0}, "epsilon_std"),
        ({"exploration_decay": 100}, "--exploration_decay does not apply to --policy MPO"),
    ],
)
def test_a_preset_with_an_unknown_flag_or_bad_value_exits_2(settings, message, capsys):
    parser = dm_parser()
    args = parser.parse_args(["--policy", "MPO"])
    preset = presets.Preset("dm_control/*", presets.preset_file("MPO"), "docs", settings)
    with pytest.raises(SystemExit) as exit_info:
        driver.apply_preset(parser, args, preset, set())
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: preset dm_control/* (jax_rl/presets/mpo.toml): ")
    assert message in err and err.count("\n") == 1


def test_explicit_flags_are_the_ones_on_the_command_line():
    parser = dm_parser()
    given = driver.explicit_flags(parser, ["--policy", "SAC", "--tau=0.01", "--no_progress"])
    assert given == {"policy", "tau", "no_progress"}
    assert parser.parse_args([]).no_progress is False  # the defaults are back afterwards
