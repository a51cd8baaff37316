"""The data every run is made of: transitions, the replay buffer, observation
normalisation, colored exploration noise, the population axis (vmapped seeds) and NumPy
random generators as JSON (what host-side checkpoints keep)."""
