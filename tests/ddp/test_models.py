"""The networks and data of inart.models: torchvision's shapes, no downloads."""

import torch

from inart.models import TinyGPT, copy_task, digits, gpt2_small, resnet18, resnet50


def count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_resnets_have_torchvisions_parameter_counts():
    assert count(resnet18()) == 11_689_512
    assert count(resnet50()) == 25_557_032
    out = resnet18(num_classes=10, small_input=True)(torch.zeros(2, 3, 16, 16))
    assert out.shape == (2, 10)


def test_gpt_shapes():
    assert count(gpt2_small()) == 124_439_808  # GPT-2 small, tied head
    tokens = copy_task(3, 8, 16, torch.Generator().manual_seed(0))
    assert tokens.shape == (3, 8) and torch.equal(tokens[:, :4], tokens[:, 4:])
    assert TinyGPT(16, 8, 32, 4, 1)(tokens).shape == (3, 8, 16)


def test_digits_come_from_the_installed_package():
    train_x, train_y, test_x, test_y = digits(16)
    assert train_x.shape[1:] == (3, 16, 16) and len(train_x) + len(test_x) == 1797
    assert set(train_y.tolist()) == set(range(10))
