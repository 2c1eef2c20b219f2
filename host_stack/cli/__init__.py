"""The host stack's commands: train and experiment."""
