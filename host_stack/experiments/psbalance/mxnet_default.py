"""MXNet's own key-to-server assignment: what an unmodified MXNet "Average" PS load looks like.

Cai et al. (ZTE Comm. 2023) implement Aware inside MXNet and compare it with "Average"
(equal distribution).
Stock MXNet does not split the model equally: ``KVStoreDist::EncodeKey`` (src/kvstore/
kvstore_dist.h) sends a tensor of fewer than ``MXNET_KVSTORE_BIGARRAY_BOUND`` (1e6) elements
whole to server ``(key * 9973) % num_servers`` and splits only larger ones evenly.  Keys are
the trainable parameters' indices in the network's order (conv weight, BN gamma, BN beta, ...),
so on small-tensor models a few servers carry most of the bytes.  The tensor lists below are
MXNet's symbol definitions of the paper's three models (MobileNet v1 1.0, ResNet-50 v1,
AlexNet), trainable parameters only (BN moving statistics are not pushed).
"""

from __future__ import annotations

from collections.abc import Mapping

BIGARRAY_BOUND = 1_000_000  # MXNet's default MXNET_KVSTORE_BIGARRAY_BOUND, in elements


def _conv_bn(cin: int, cout: int, k: int, groups: int = 1) -> list[int]:
    """A bias-free convolution and its batch norm's gamma and beta."""
    return [cout * (cin // groups) * k * k, cout, cout]


def mobilenet() -> list[int]:
    """MobileNet v1 (width 1.0): 4,231,976 parameters."""
    out = _conv_bn(3, 32, 3)
    blocks = [(32, 64), (64, 128), (128, 128), (128, 256), (256, 256), (256, 512),
              *[(512, 512)] * 5, (512, 1024), (1024, 1024)]
    for cin, cout in blocks:
        out += _conv_bn(cin, cin, 3, groups=cin) + _conv_bn(cin, cout, 1)
    return out + [1024 * 1000, 1000]


def resnet50() -> list[int]:
    """ResNet-50 v1 (bottleneck blocks 3, 4, 6, 3): 25,557,032 parameters."""
    out = _conv_bn(3, 64, 7)
    cin = 64
    for width, blocks in ((64, 3), (128, 4), (256, 6), (512, 3)):
        for b in range(blocks):
            out += _conv_bn(cin, width, 1) + _conv_bn(width, width, 3) \
                + _conv_bn(width, 4 * width, 1)
            if b == 0:
                out += _conv_bn(cin, 4 * width, 1)  # the projection shortcut
            cin = 4 * width
    return out + [2048 * 1000, 1000]


def alexnet() -> list[int]:
    """AlexNet as in MXNet's symbol (96-256-384-384-256 filters): 62,378,344 parameters."""
    out: list[int] = []
    for cin, cout, k in ((3, 96, 11), (96, 256, 5), (256, 384, 3), (384, 384, 3),
                         (384, 256, 3)):
        out += [cout * cin * k * k, cout]
    for cin, cout in ((9216, 4096), (4096, 4096), (4096, 1000)):
        out += [cout * cin, cout]
    return out


TENSORS = {"mobilenet": mobilenet, "resnet50": resnet50, "alexnet": alexnet}


def server_fractions(tensors: list[int], servers: int,
                     bound: int = BIGARRAY_BOUND) -> list[float]:
    """Fraction of the model's elements each server aggregates under MXNet's EncodeKey."""
    if servers < 1:
        raise ValueError(f"servers: expected >= 1, got {servers}")
    if not tensors or min(tensors) <= 0:
        raise ValueError("tensors: expected a non-empty list of positive element counts")
    load = [0] * servers
    for key, size in enumerate(tensors):
        if size < bound:
            load[(key * 9973) % servers] += size
        else:
            for i in range(servers):
                load[i] += round(size / servers * (i + 1)) - round(size / servers * i)
    total = sum(tensors)
    return [x / total for x in load]


def mxnet_shares(model_name: str, nodes: Mapping[str, float], model: float) -> dict[str, float]:
    """Shares (in the unit of ``model``) of stock MXNet for ``model_name``; network-agnostic,
    so ``nodes``' throughputs are ignored and only their order (server rank) counts."""
    if model_name not in TENSORS:
        raise ValueError(f"model_name: expected one of {sorted(TENSORS)}, got {model_name!r}")
    fractions = server_fractions(TENSORS[model_name](), len(nodes))
    return {node: model * f for node, f in zip(nodes, fractions, strict=True)}
