"""Temporally correlated ("colored") exploration noise for the host loop.

Off-policy learners explore with white noise by default: TD3 adds
N(0, exploration_noise) to its action, SAC and MPO sample their Gaussian
policies, each step independently of the last. Colored noise replaces those
independent standard-normal draws with a Gaussian sequence whose power spectrum
falls off as 1 / f^beta over the episode: beta = 0 is white noise, beta = 2 red
(Brownian-like) noise, beta = 1 pink noise, which Eberhard et al. (2023, "Pink
noise is all you need") found the best single choice across continuous-control
tasks. Every entry still has mean 0 and variance 1, so the learners' noise
scales (TD3's exploration_noise, the policies' standard deviations) keep their
meaning; only the correlation in time changes.

The host draws one sequence per agent and action dimension at each episode
start (and again should an episode outlast it) and hands the learner one
standard-normal vector per step; the learners' `act(..., noise=)` uses it in
place of the draw from the key.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jax_rl.core.random_state import random_state_from_json, random_state_to_json

SEQUENCE_LENGTH = 1000
"""steps per drawn sequence: dm_control's episode length (a new one starts with every episode)"""


def powerlaw_spectrum_scale(beta: float, length: int) -> np.ndarray:
    """Amplitude per rfft frequency k = 0 .. length // 2: (k / length)^(-beta / 2), with the
    zero frequency given the lowest nonzero frequency's amplitude (a sequence this long
    cannot tell them apart)."""
    frequencies = np.fft.rfftfreq(length)
    frequencies[0] = frequencies[1]
    return frequencies ** (-beta / 2.0)


def colored_sequence(rng: np.random.Generator, beta: float, length: int, size: int) -> np.ndarray:
    """[length, size] float32: `size` independent Gaussian sequences, each stationary
    (circularly) with power spectrum ~ 1 / f^beta, mean 0 and variance exactly 1 per entry.

    Each frequency gets a complex Gaussian coefficient of that frequency's amplitude; the
    real-only ones (zero and, for an even length, the Nyquist frequency) get sqrt(2) more
    on their real part, so that beta = 0 gives independent N(0, 1) entries. Entry variance
    is then 2 / length^2 * sum of the squared amplitudes over all `length` frequencies,
    which the sequence is divided by.
    """
    if length < 2:
        raise ValueError(f"a colored-noise sequence needs at least 2 steps, got {length}")
    scale = powerlaw_spectrum_scale(beta, length)
    shape = (size, scale.size)
    coefficients = scale * (rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
    real_only = [0] + ([scale.size - 1] if length % 2 == 0 else [])
    coefficients[:, real_only] = np.sqrt(2.0) * coefficients[:, real_only].real
    squared = scale**2
    # Every frequency but the real-only ones appears twice in the full (two-sided) spectrum.
    total = 2.0 * squared.sum() - squared[real_only].sum()
    std = np.sqrt(2.0 * total) / length
    sequences = np.fft.irfft(coefficients, n=length, axis=-1) / std
    return sequences.T.astype(np.float32)


class ColoredNoise:
    """Standard-normal exploration noise for one agent, colored with exponent `beta`.

    `reset()` at each episode start, `next()` once per noised action (so the first noised
    action of a run, after the warm-up, also starts a sequence, mid-episode). Drawn from its own
    NumPy generator (seeded from the agent's seed), so it is reproducible and, with
    `state` / `restore`, continues exactly across a checkpoint.
    """

    def __init__(
        self, beta: float, action_size: int, seed: int, length: int = SEQUENCE_LENGTH
    ) -> None:
        if not np.isfinite(beta) or beta < 0:
            raise ValueError(f"noise_color must be a finite number >= 0, got {beta}")
        self.beta = float(beta)
        self.action_size = action_size
        self.length = length
        # A stream of its own: the warm-up actions use np.random.default_rng(seed).
        self.rng = np.random.default_rng([seed, 0xC010])
        self.sequence = np.zeros((length, action_size), np.float32)
        self.position = length  # used up: the first next() draws a sequence

    def reset(self) -> None:
        """A new episode: the next `next()` starts a fresh sequence."""
        self.position = self.length

    def next(self) -> np.ndarray:
        """The next [action_size] standard-normal vector of the sequence."""
        if self.position >= self.length:
            self.sequence = colored_sequence(self.rng, self.beta, self.length, self.action_size)
            self.position = 0
        value = self.sequence[self.position]
        self.position += 1
        return value

    def state(self) -> tuple[np.ndarray, dict[str, Any]]:
        """(array, JSON-compatible host state) to continue from."""
        return self.sequence, {"position": self.position, "rng": random_state_to_json(self.rng)}

    def restore(self, sequence: np.ndarray, host: dict[str, Any]) -> None:
        self.sequence = np.asarray(sequence, np.float32)
        self.position = int(host["position"])
        random_state_from_json(self.rng, host["rng"])
