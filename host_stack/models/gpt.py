"""A small GPT-style decoder (token + position embeddings, pre-norm causal self-attention
blocks, tied output head), built locally so that nothing is downloaded.  ``gpt2_small()``
has GPT-2 small's shape (12 layers, 12 heads, 768 wide, 50,257 tokens: ~124 M parameters)
for sizing; the examples train a few-layer one on a generated task."""

from __future__ import annotations

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int = 64, context: int = 32, width: int = 128, heads: int = 4,
                 layers: int = 4) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied, as in GPT-2
        for emb in (self.tokens, self.positions):  # GPT-2's init: logits start near uniform
            nn.init.normal_(emb.weight, std=0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.tokens(idx) + self.positions(torch.arange(t, device=idx.device))
        mask = torch.triu(torch.full((t, t), float("-inf"), device=idx.device), 1)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln(x))


def gpt2_small() -> TinyGPT:
    return TinyGPT(vocab=50257, context=1024, width=768, heads=12, layers=12)
