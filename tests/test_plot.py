from pathlib import Path

import numpy as np

from jax_rl.watch import plot


def write_run(folder: Path, returns: list[float]) -> None:
    folder.mkdir(parents=True)
    lines = ["step,wall_time,return_mean,return_std"]
    lines += [f"{1000 * i},{i},{r},0" for i, r in enumerate(returns)]
    (folder / "evaluations.csv").write_text("\n".join(lines) + "\n")


def test_runs_are_grouped_by_name_and_averaged(tmp_path):
    write_run(tmp_path / "SAC-seed0", [0.0, 10.0, 20.0])
    write_run(tmp_path / "SAC-seed1", [0.0, 30.0, 40.0, 50.0])  # longer: cut to the common part
    write_run(tmp_path / "TD3-seed0", [5.0, 6.0])
    curves = plot.summarise(plot.group_runs([tmp_path]))
    assert set(curves) == {"SAC", "TD3"}
    np.testing.assert_array_equal(curves["SAC"]["steps"], [0, 1000, 2000])
    np.testing.assert_allclose(curves["SAC"]["mean"], [0.0, 20.0, 30.0])
    np.testing.assert_allclose(curves["SAC"]["min"], [0.0, 10.0, 20.0])
    np.testing.assert_allclose(curves["SAC"]["final"], [20.0, 40.0])


def test_plot_command_writes_an_image(tmp_path, capsys):
    write_run(tmp_path / "runs" / "SAC-seed0", [0.0, 10.0])
    out = tmp_path / "curves.png"
    assert plot.main([str(tmp_path / "runs"), "--out", str(out)]) == 0
    assert out.stat().st_size > 1000
    assert "SAC: final return mean 10.0" in capsys.readouterr().out


def test_no_runs_is_an_error(tmp_path):
    assert plot.main([str(tmp_path), "--out", str(tmp_path / "x.png")]) == 2


def test_band_is_the_t_confidence_interval_of_the_mean(tmp_path):
    write_run(tmp_path / "SAC-seed0", [0.0, 10.0])
    write_run(tmp_path / "SAC-seed1", [0.0, 30.0])
    write_run(tmp_path / "TD3-seed0", [5.0, 6.0])
    curves = plot.summarise(plot.group_runs([tmp_path]))
    # Two seeds: t(0.975, 1 dof) = 12.706; std (ddof 1) of {10, 30} = 14.142; / sqrt(2).
    np.testing.assert_allclose(curves["SAC"]["ci95"], [0.0, 12.706 * 14.142 / 2**0.5], rtol=1e-4)
    np.testing.assert_array_equal(curves["TD3"]["ci95"], [0.0, 0.0])  # one seed: no band


def test_population_agents_group_by_setting(tmp_path):
    for setting, returns in (("tau=0.005", [1.0, 3.0]), ("tau=0.05", [5.0, 9.0])):
        for seed, r in enumerate(returns):
            write_run(tmp_path / f"SAC-{setting}-seed{seed}", [0.0, r])
    curves = plot.summarise(plot.group_runs([tmp_path]))
    assert set(curves) == {"SAC-tau=0.005", "SAC-tau=0.05"}
    np.testing.assert_allclose(curves["SAC-tau=0.05"]["final"], [5.0, 9.0])
