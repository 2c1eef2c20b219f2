"""Models and data for training scripts that download nothing (host_stack/models)."""

from host_stack.models.data import copy_task, digits
from host_stack.models.gpt import TinyGPT, gpt2_small
from host_stack.models.resnet import resnet18, resnet50

__all__ = ["TinyGPT", "copy_task", "digits", "gpt2_small", "resnet18", "resnet50"]
