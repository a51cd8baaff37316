import numpy as np
import pytest

from jax_rl.core.noise import ColoredNoise, colored_sequence


def draw(beta, length=1000, size=400, seed=0):
    return colored_sequence(np.random.default_rng(seed), beta, length, size)  # [length, size]


def lag_one_correlation(x):
    return float(np.mean(x[1:] * x[:-1]) / np.mean(x * x))


@pytest.mark.parametrize("beta", [0.0, 1.0, 2.0])
@pytest.mark.parametrize("length", [1000, 999])
def test_entries_have_mean_zero_and_variance_one(beta, length):
    # Many sequences: a red one's variance sits in a few low frequencies, so one sequence
    # says little about it.
    x = draw(beta, length=length, size=5000)
    assert x.shape == (length, 5000) and x.dtype == np.float32
    assert abs(x.mean()) < 0.03
    variance_per_step = (x**2).mean(axis=1)
    assert abs(variance_per_step.mean() - 1.0) < 0.03
    assert abs(variance_per_step[0] - variance_per_step[length // 2]) < 0.1


def test_white_noise_is_uncorrelated_in_time():
    x = draw(0.0)
    assert abs(lag_one_correlation(x)) < 0.01
    assert abs(float(np.mean(x[5:] * x[:-5]))) < 0.01


def test_colored_noise_is_correlated_more_the_larger_beta():
    white, pink, red = (lag_one_correlation(draw(beta)) for beta in (0.0, 1.0, 2.0))
    assert white < 0.02 < pink < red
    assert red > 0.9


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_power_spectrum_falls_as_one_over_f_to_the_beta(beta):
    x = draw(beta).astype(np.float64)
    power = (np.abs(np.fft.rfft(x, axis=0)) ** 2).mean(axis=1)
    frequencies = np.fft.rfftfreq(x.shape[0])
    inside = slice(1, -1)  # leave out the zero and Nyquist frequencies
    slope = np.polyfit(np.log(frequencies[inside]), np.log(power[inside]), 1)[0]
    assert slope == pytest.approx(-beta, abs=0.05)


def test_colored_noise_restarts_at_each_episode_and_at_the_end_of_a_sequence():
    noise = ColoredNoise(1.0, action_size=2, seed=3, length=5)
    first = np.stack([noise.next() for _ in range(5)])
    sixth = noise.next()  # the sequence is used up: a new one starts
    noise.reset()
    after_reset = noise.next()
    again = ColoredNoise(1.0, action_size=2, seed=3, length=5)
    np.testing.assert_array_equal(np.stack([again.next() for _ in range(5)]), first)
    assert not np.allclose(sixth, first[0]) and not np.allclose(after_reset, sixth)
    # A fresh sequence after reset: the draw after the reset starts the third sequence.
    rng = np.random.default_rng([3, 0xC010])
    sequences = [colored_sequence(rng, 1.0, 5, 2) for _ in range(3)]
    np.testing.assert_array_equal(sequences[0], first)
    np.testing.assert_array_equal(sequences[1][0], sixth)
    np.testing.assert_array_equal(sequences[2][0], after_reset)


def test_state_and_restore_continue_exactly():
    noise = ColoredNoise(2.0, action_size=3, seed=0, length=7)
    for _ in range(10):
        noise.next()
    sequence, host = noise.state()
    expected = [noise.next() for _ in range(12)]
    other = ColoredNoise(2.0, action_size=3, seed=99, length=7)
    other.restore(np.array(sequence), host)
    np.testing.assert_array_equal(np.stack([other.next() for _ in range(12)]), expected)


@pytest.mark.parametrize("beta", [-1.0, float("nan"), float("inf")])
def test_bad_color_is_refused(beta):
    with pytest.raises(ValueError, match="noise_color"):
        ColoredNoise(beta, action_size=1, seed=0)
