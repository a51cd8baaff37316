"""The data every run is made of: transitions, the replay buffer, observation
normalisation, colored exploration noise and the population axis (vmapped seeds)."""
