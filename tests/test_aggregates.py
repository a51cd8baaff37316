"""The aggregates over tasks (jax_rl.tools.aggregates, rliable's functions) against figures
worked out by hand on tiny tables, rliable's own example, and the tables' aggregates block."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from jax_rl.tools import aggregates, results

LEARNERS = ("TD3 ", "SAC ", "best")
REPS = 200  # enough for the intervals below, which sit on blocks of a quarter of the resamples


def test_iqm_mean_median_and_optimality_gap_by_hand():
    scores = np.array([[0.1, 0.4, 0.9, 0.2], [0.3, 0.8, 0.5, 1.2]])  # 2 seeds x 4 tasks
    figures = aggregates.aggregates(scores, reps=REPS)
    # IQM: the 8 scores sorted, 0.1 0.2 | 0.3 0.4 0.5 0.8 | 0.9 1.2: the middle half's mean.
    assert figures["IQM"].point == pytest.approx((0.3 + 0.4 + 0.5 + 0.8) / 4)
    # The tasks' means 0.2, 0.6, 0.7, 0.7: their mean and median.
    assert figures["mean"].point == pytest.approx(0.55)
    assert figures["median"].point == pytest.approx(0.65)
    # Below 1, the scores clipped at 1 (1.2 -> 1): 1 - 4.2 / 8.
    assert figures["optimality gap"].point == pytest.approx(0.475)
    for estimate in figures.values():
        assert estimate.low <= estimate.point <= estimate.high


def test_a_stratified_bootstrap_interval_by_hand():
    """Only task 0's seeds differ (0 and 1): a resample of its 2 seeds is (0, 0), (0, 1) or
    (1, 0), or (1, 1), with chances 1/4, 1/2, 1/4, so the mean over the 4 tasks is 0.375,
    0.5 or 0.625 with those chances; the 2.5% and 97.5% percentiles are the two ends. The
    IQM and median never move (the middle of the 8 scores and of the 4 task means is 0.5)."""
    scores = np.array([[0.0, 0.5, 0.5, 0.5], [1.0, 0.5, 0.5, 0.5]])
    figures = aggregates.aggregates(scores, reps=REPS)
    mean, gap = figures["mean"], figures["optimality gap"]
    assert (mean.point, mean.low, mean.high) == pytest.approx((0.5, 0.375, 0.625))
    assert (gap.point, gap.low, gap.high) == pytest.approx((0.5, 0.375, 0.625))
    for name in ("IQM", "median"):
        assert (figures[name].low, figures[name].high) == pytest.approx((0.5, 0.5))
    assert figures["mean"].text() == "0.50 [0.38, 0.62]"


def test_the_bootstrap_is_seeded_and_leaves_numpys_generator_as_it_was():
    scores = np.random.default_rng(3).uniform(size=(3, 6))
    np.random.seed(123)
    expected = np.random.uniform()
    np.random.seed(123)
    first = aggregates.aggregates(scores, reps=50, seed=7)
    assert np.random.uniform() == expected  # the global generator restored
    assert aggregates.aggregates(scores, reps=50, seed=7) == first
    assert aggregates.aggregates(scores, reps=50, seed=8) != first


def test_probability_of_improvement_by_hand():
    # Task 0: X's 1 and 3 against Y's 2 and 2: 2 of the 4 pairs won, 1/2. Task 1: X's 5 and
    # 5 against Y's 5 and 4: two ties (1/2 each) and two wins, 3/4. Averaged: 5/8.
    x = np.array([[1.0, 5.0], [3.0, 5.0]])
    y = np.array([[2.0, 5.0], [2.0, 4.0]])
    chance = aggregates.improvement(x, y, reps=50)
    assert chance.point == pytest.approx(5 / 8)
    assert chance.low <= chance.point <= chance.high
    assert aggregates.improvement(y, x, reps=20).point == pytest.approx(3 / 8)


def test_rliables_own_example():
    """rliable's metrics test (google-research/rliable, tests/rliable/metrics_test.py):
    runs x tasks matrices whose median, mean and IQM are 1.5 and 2, and P(X > Y) = 1/3."""
    x = np.array([[1, 2], [2, 2], [1, 1], [2, 1]], dtype=float)
    y = np.array([[1, 1], [2, 2], [3, 3]], dtype=float)
    for scores, value in ((x, 1.5), (y, 2.0)):
        figures = aggregates.aggregates(scores, reps=20)
        assert [figures[name].point for name in ("median", "mean", "IQM")] == [value] * 3
    assert aggregates.improvement(x, y, reps=20).point == pytest.approx(1 / 3)


def test_a_performance_profile_counts_the_runs_above_each_threshold():
    scores = np.array([[0.1, 0.4], [0.3, 0.8]])
    profile = aggregates.profile(scores, np.array([0.0, 0.2, 0.5, 1.0]), reps=20)
    assert list(profile.fraction) == [1.0, 0.75, 0.25, 0.0]
    assert np.all(profile.low <= profile.fraction) and np.all(profile.fraction <= profile.high)


def test_a_matrix_keeps_the_fewest_seeds_any_task_has_and_says_so():
    finals = {"cartpole-swingup": [100.0, 200.0, 300.0], "walker-walk": [400.0, 500.0]}
    dmc = aggregates.NORMALISATIONS["dmc"]
    matrix = aggregates.score_matrix("TD3", finals, ["cartpole-swingup", "walker-walk"], dmc)
    np.testing.assert_allclose(matrix.scores, [[0.1, 0.4], [0.2, 0.5]])
    assert matrix.shape_text() == "2 x 2 (the first 2 of 2-3 seeds per task)"
    with pytest.raises(ValueError, match="TD3 has no runs on fish-swim"):
        aggregates.score_matrix("TD3", finals, ["fish-swim"], dmc)


def test_gymnasium_scores_are_returns_over_tianshou_sacs_published_mean():
    gym = aggregates.pick_normalisation("auto", ["HalfCheetah-v5", "Hopper-v5"])
    assert gym.name == "gym" and gym.divisor("HalfCheetah-v5") == 8207.6
    assert aggregates.pick_normalisation("auto", ["walker-walk"]).name == "dmc"
    with pytest.raises(ValueError, match="no reference score for Swimmer-v5"):
        aggregates.score_matrix("SAC", {"Swimmer-v5": [30.0]}, ["Swimmer-v5"], gym)
    for name, tasks in (("auto", ["Hopper-v5", "walker-walk"]), ("atari", ["walker-walk"])):
        with pytest.raises(ValueError):
            aggregates.pick_normalisation(name, tasks)


def test_mrqs_published_seeds_are_its_columns_means_and_spreads():
    """docs/results/published/mrq_dmc28_100k.csv against the dmc28 table's MR.Q column
    (mean and sample standard deviation over its 10 seeds, as REFERENCES.md rounds them)."""
    args = results.parse_args(["--suite", "dmc28"])
    (mrq,) = [ref for ref in args.suite.references if ref.column == "MR.Q"]
    seeds = results.published_seeds(args, mrq)
    assert seeds is not None and sorted(seeds) == sorted(results.DMC28_TASKS)
    for task, returns in seeds.items():
        assert len(returns) == 10, task
        mean, spread = mrq.values[task]
        assert (round(np.mean(returns)), round(np.std(returns, ddof=1))) == (mean, spread), task
    assert results.published_seeds(results.parse_args(["--suite", "dmc28", "--steps", "200000"]),
                                   mrq) is None  # fmt: skip


# --- The command line ----------------------------------------------------------------------


def write_cell(out: Path, task: str, learner: str, finals: list[float], steps: int) -> None:
    """A table's cell as the results tool copies it: <task>/<learner>/<learner>-seed<k>/."""
    for seed, final in enumerate(finals):
        agent = out / task / learner / f"{learner}-seed{seed}"
        agent.mkdir(parents=True)
        (agent / "evaluations.csv").write_text(
            f"step,return_mean,return_std\n{steps // 2},1.0,0.0\n{steps},{final},0.0\n"
        )
    summary = {"agents": [{} for _ in finals], "env_steps_per_agent": steps, "wall_time": 60}
    (out / task / learner / "summary.json").write_text(json.dumps(summary))


def test_the_command_prints_each_learners_aggregates_and_draws_the_profiles(tmp_path, capsys):
    table = tmp_path / "dmc"
    write_cell(table, "cartpole-swingup", "TD3", [800.0, 800.0, 900.0], 1000)  # 3 seeds
    write_cell(table, "walker-walk", "TD3", [600.0, 800.0], 1000)  # 2: TD3 keeps 2 of each
    write_cell(table, "cartpole-swingup", "SAC", [500.0, 500.0], 1000)
    write_cell(table, "walker-walk", "SAC", [500.0, 500.0], 1000)
    write_cell(table, "fish-swim", "SAC", [100.0, 100.0], 1000)  # not TD3's: left out
    # A run folder elsewhere, named by its config.json, under a label of its own.
    run = tmp_path / "runs" / "mine"
    for seed, final in enumerate([1000.0, 1000.0]):
        for task, (domain, name) in (("a", ("cartpole", "swingup")), ("b", ("walker", "walk"))):
            agent = run / task / f"SAC-seed{seed}"
            agent.mkdir(parents=True)
            (agent / "evaluations.csv").write_text(f"step,return_mean\n1000,{final}\n")
            config = {"policy": "SAC", "domain_name": domain, "task_name": name}
            (agent / "config.json").write_text(json.dumps(config))
    profiles = tmp_path / "profiles.png"
    argv = [str(table), f"best={run}", "--reps", "50", "--out", str(profiles)]
    assert aggregates.main([*argv, "--improvement", "TD3,SAC"]) == 0
    out = capsys.readouterr().out
    assert "normalisation: dmc, return / 1000" in out
    assert "tasks: 2 every learner has (left out, not every learner's: fish-swim)" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line[:4] in LEARNERS}
    estimates = {k: re.findall(r"\d\.\d\d \[\d\.\d\d, \d\.\d\d\]", v) for k, v in rows.items()}
    assert "TD3      2 x 2 (the first 2 of 2-3 seeds per task)  " in rows["TD3"]
    assert "best     2 x 2  " in rows["best"]  # the label names the run folder's learner
    # TD3's kept scores (0.8, 0.6) and (0.8, 0.8): its task means 0.8 and 0.7.
    assert estimates["TD3"][1].startswith("0.75 [")  # the mean, after the IQM
    assert estimates["SAC"] == ["0.50 [0.50, 0.50]"] * 3 + ["0.50 [0.50, 0.50]"]
    assert estimates["best"] == ["1.00 [1.00, 1.00]"] * 3 + ["0.00 [0.00, 0.00]"]
    assert "P(TD3 > SAC) = 1.00 [1.00, 1.00]" in out  # every TD3 seed above every SAC seed
    assert profiles.exists() and f"wrote {profiles}" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["{empty}"], "no evaluations.csv under it (no runs)"),
        (["{missing}"], "no such file or folder"),
        (["{table}", "--normalise", "atari"], "unknown normalisation 'atari'"),
        (["{table}", "--improvement", "TD3,MPO"], "--improvement TD3,MPO: name two of"),
        (["{table}", "--reps", "0"], "--reps must be positive"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    """One line on stderr and exit 2 (SystemExit, not a traceback's exception)."""
    table = tmp_path / "table"
    write_cell(table, "walker-walk", "TD3", [500.0], 1000)
    (tmp_path / "empty").mkdir()
    paths = {"empty": tmp_path / "empty", "missing": tmp_path / "nowhere", "table": table}
    with pytest.raises(SystemExit) as exit_:
        aggregates.main([a.format(**paths) for a in argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


# --- The tables' aggregates block ----------------------------------------------------------


def test_the_gym_table_closes_with_the_aggregates_and_the_profiles(tmp_path):
    out = tmp_path / "gym200k"
    sac = {t: mean for t, (mean, _) in results.TIANSHOU_200K[0].values.items()}
    for task, reference in sac.items():  # SAC scores 1 on every task, TD3 1/2
        write_cell(out, task, "SAC", [reference] * 3, 200_000)
        write_cell(out, task, "TD3", [reference / 2] * 3, 200_000)
    args = results.parse_args(["--suite", "gym", "--out", str(out), "--bootstrap_reps", "20"])
    table = results.write_table(args).read_text()
    header = "| learner | seeds x tasks | IQM | mean | median | optimality gap |"
    tianshou_td3 = np.mean([m / sac[t] for t, (m, _) in results.TIANSHOU_200K[1].values.items()])
    assert f"{tianshou_td3:.2f}" == "0.70"
    assert table_rows(table, header) == [
        "| SAC | 3 x 5 | 1.00 [1.00, 1.00] | 1.00 [1.00, 1.00] | 1.00 [1.00, 1.00] "
        "| 0.00 [0.00, 0.00] |",
        "| TD3 | 3 x 5 | 0.50 [0.50, 0.50] | 0.50 [0.50, 0.50] | 0.50 [0.50, 0.50] "
        "| 0.50 [0.50, 0.50] |",
        "| Tianshou SAC (published means) | means of 5 | - | 1.00 | - | - |",
        "| Tianshou TD3 (published means) | means of 5 | - | 0.70 | - | - |",
    ]
    assert "return / Tianshou SAC's published mean return at 200k steps" in table
    assert "(20 resamples of the seeds within each task, percentile, numpy seed 0)" in table
    assert "without an interval or the other aggregates (Tianshou SAC's is 1" in table
    assert "P(TD3 > SAC) = 0.00 [0.00, 0.00]" in table
    assert "![performance profiles](gym200k_profiles.png)" in table
    # The main table above it is as before, and the learning curves' figure still closes it.
    assert "| Hopper-v5 | 3234 ± 0 (defaults) | 1617 ± 0 (defaults) | 3234 ± 314 |" in table
    assert table.rstrip().endswith("![learning curves](gym200k.png)")
    assert results.write_profiles(args) == tmp_path / "gym200k_profiles.png"
    assert (tmp_path / "gym200k_profiles.png").exists()
    # After each cell of a sitting: no bootstrap, one line saying when the block comes.
    quick = results.write_table(args, aggregates=False).read_text()
    assert not table_rows(quick, header)
    assert "Aggregates over the 5 tasks: written when the sitting ends" in quick


def test_the_dmc28_table_sets_mrqs_seeds_beside_ours_and_says_who_has_no_row(tmp_path):
    out = tmp_path / "dmc28"
    for task in results.DMC28_TASKS:
        write_cell(out, task, "TD3", [500.0, 500.0, 500.0], 100_000)
    write_cell(out, "walker-walk", "SAC", [900.0, 900.0, 900.0], 100_000)
    args = results.parse_args(["--suite", "dmc28", "--out", str(out), "--bootstrap_reps", "20"])
    table = results.write_table(args).read_text()
    header = "| learner | seeds x tasks | IQM | mean | median | optimality gap |"
    td3, mrq = table_rows(table, header)
    assert td3 == (
        "| TD3 | 3 x 28 | 0.50 [0.50, 0.50] | 0.50 [0.50, 0.50] | 0.50 [0.50, 0.50] "
        "| 0.50 [0.50, 0.50] |"
    )
    assert mrq.startswith("| MR.Q (published seeds) | 10 x 28 | ")
    assert mrq.split(" | ")[3].startswith("0.47 [")  # its mean over the 28: 466 / 1000
    assert "SAC has cells on 1 of the 28 tasks: no row yet." in table
    assert "MR.Q's seeds: [published/mrq_dmc28_100k.csv](published/mrq_dmc28_100k.csv)" not in (
        table
    )  # a table outside docs/results names the file by its path
    assert "MR.Q's seeds: `docs/results/published/mrq_dmc28_100k.csv`." in table
    assert "SimbaV2 and BRO published a mean and a spread per task only, on 18 of the 28" in table
    assert "P(TD3 > MR.Q) = " in table and "P(TD3 > SAC)" not in table


def table_rows(text: str, header: str) -> list[str]:
    lines = text.splitlines()
    if header not in lines:
        return []
    rows = []
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows
