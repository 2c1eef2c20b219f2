"""Models and data sets for training over INA that need no download: the architectures of
ResNet-18/50 and a GPT-style transformer, built from random weights, and offline data."""
