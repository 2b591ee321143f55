"""A small decoder-only transformer over bytes (GPT-2 style, pre-LayerNorm).

Shapes: token ids ``(batch, seq_len)`` int64 in 0..255 -> logits ``(batch, seq_len, 256)``.
The input embedding is tied to the output layer; positions are learned. The *non-embedding*
parameter count (what scaling laws call N) excludes the token and position embeddings.

torch is an optional dependency (the extra ``lab``), so this module does not import it: the
caller passes the torch module in (see :func:`bayescpt.lab.require_torch`), and the
``nn.Module`` classes are defined once per torch module by :func:`model_classes`.
"""

from __future__ import annotations

import functools
import math

VOCAB = 256


@functools.cache
def model_classes(torch):
    """The ``(Block, ByteLM)`` module classes built on ``torch`` (one pair per torch module)."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        """Pre-LayerNorm block: causal multi-head self-attention, then a 4x GELU MLP."""

        def __init__(self, d_model: int, n_heads: int):
            super().__init__()
            self.n_heads = n_heads
            self.ln1 = nn.LayerNorm(d_model)
            self.qkv = nn.Linear(d_model, 3 * d_model)
            self.proj = nn.Linear(d_model, d_model)
            self.ln2 = nn.LayerNorm(d_model)
            self.fc = nn.Linear(d_model, 4 * d_model)
            self.out = nn.Linear(4 * d_model, d_model)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            heads = lambda z: z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)  # noqa: E731
            att = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
            x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class ByteLM(nn.Module):
        """``n_layers`` blocks of width ``d_model`` with ``n_heads`` heads, context ``seq_len``."""

        def __init__(self, d_model: int, n_layers: int, n_heads: int, seq_len: int):
            super().__init__()
            if d_model % n_heads:
                raise ValueError(f"d_model={d_model} is not a multiple of n_heads={n_heads}")
            self.tok = nn.Embedding(VOCAB, d_model)
            self.pos = nn.Embedding(seq_len, d_model)
            self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
            self.ln_f = nn.LayerNorm(d_model)
            self.apply(self._init)
            for name, p in self.named_parameters():  # GPT-2: scale the residual projections
                if name.endswith(("proj.weight", "out.weight")):
                    nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layers))

        @staticmethod
        def _init(m):
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.blocks:
                x = blk(x)
            return self.ln_f(x) @ self.tok.weight.T

        def loss(self, idx):
            """Mean next-byte cross-entropy in nats over all predicted positions of ``idx``."""
            logits = self(idx[:, :-1])
            return F.cross_entropy(logits.reshape(-1, VOCAB), idx[:, 1:].reshape(-1))

        def non_embedding_params(self) -> int:
            emb = {id(self.tok.weight), id(self.pos.weight)}
            return sum(p.numel() for p in self.parameters() if id(p) not in emb)

    return Block, ByteLM


def byte_lm(torch, d_model: int, n_layers: int, n_heads: int, seq_len: int):
    """A freshly initialised :class:`ByteLM` (weights drawn from torch's global generator)."""
    return model_classes(torch)[1](d_model, n_layers, n_heads, seq_len)
