"""The run driver, floor by floor: flags and presets (cli, presets, resuming), the
trainers that own the environments (trainers, subpopulations, play, cluster), and the
driver the entry points call (driver, saved runs)."""
