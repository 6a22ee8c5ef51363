"""A BERT-shaped encoder (Hugging Face's ``BertModel`` written out: embeddings, then encoder
layers) with seeded weights: :func:`bert_encoder`."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["BertEncoder", "BertLayer", "bert_encoder"]


class BertLayer(nn.Module):
    """One encoder layer: self-attention (query/key/value Linears, heads by view + permute,
    scores scaled, the extended attention mask added, softmax, context merged back), dense +
    LayerNorm of the residual; GELU intermediate, dense + LayerNorm of the residual."""

    def __init__(self, hidden: int, heads: int, intermediate: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attention_dense = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.activation = nn.GELU()
        self.output_dense = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view((*x.size()[:-1], self.heads, self.head_dim))
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden: torch.Tensor, extended_mask: torch.Tensor) -> torch.Tensor:
        q = self._heads(self.query(hidden))
        k = self._heads(self.key(hidden))
        v = self._heads(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + extended_mask
        probs = self.dropout(F.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        context = context.view((*context.size()[:-2], self.heads * self.head_dim))
        attended = self.attention_dense(context)
        attended = self.attention_norm(self.dropout(attended) + hidden)
        inner = self.activation(self.intermediate(attended))
        out = self.dropout(self.output_dense(inner))
        return self.output_norm(out + attended)


class BertEncoder(nn.Module):
    """Word + position + token-type embeddings (int64 ids, positions from a constant
    ``arange`` buffer) and LayerNorm, then ``layers`` :class:`BertLayer`\\ s; the attention
    mask (1 keeps a token, 0 masks it) becomes ``(1 - mask) * finfo.min`` on the scores."""

    def __init__(
        self, vocab: int, length: int, hidden: int, heads: int, intermediate: int, layers: int
    ) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(length, hidden)
        self.token_type_embeddings = nn.Embedding(2, hidden)
        self.register_buffer("position_ids", torch.arange(length).expand((1, -1)))
        self.register_buffer("token_type_ids", torch.zeros((1, length), dtype=torch.long))
        self.embeddings_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, intermediate) for _ in range(layers))
        self.dropout = nn.Dropout(0.1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        length = input_ids.shape[1]
        embeddings = self.word_embeddings(input_ids)
        embeddings = embeddings + self.token_type_embeddings(self.token_type_ids[:, :length])
        embeddings = embeddings + self.position_embeddings(self.position_ids[:, :length])
        hidden = self.dropout(self.embeddings_norm(embeddings))
        extended = attention_mask[:, None, None, :].to(hidden.dtype)
        extended = (1.0 - extended) * torch.finfo(hidden.dtype).min
        for layer in self.layers:
            hidden = layer(hidden, extended)
        return hidden


def bert_encoder(
    seed: int = 0,
    *,
    vocab: int = 8192,
    length: int = 128,
    hidden: int = 768,
    heads: int = 12,
    intermediate: int = 3072,
    layers: int = 2,
) -> BertEncoder:
    """A seeded :class:`BertEncoder` in eval mode: by default BERT-base's layer shape (hidden
    768, 12 heads, intermediate 3072) at 128 tokens, two layers, a vocabulary of 8192. The
    layer norms get random affine parameters (so folding them is exercised)."""
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        module = BertEncoder(vocab, length, hidden, heads, intermediate, layers)
        for norm in (m for m in module.modules() if isinstance(m, nn.LayerNorm)):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.25, 0.25)
    return module.eval()
