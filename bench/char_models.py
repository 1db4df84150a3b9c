"""Small character-level models written the way PyTorch users write them
(nanoGPT / makemore style), parameterised by the library module so the same
code runs on ``torch`` and on ``ferrotorch``. Used by
``bench/real_models.py`` (speed, side by side) and by the Python package's
``test_real_models.py`` (the same training loop, checked against PyTorch
and against falling loss).

Each ``make_*`` returns ``(model, batch_fn)``: ``batch_fn(step)`` gives an
``(x, y)`` batch of token ids drawn from a fixed synthetic corpus (a noisy
repeating pattern, so the loss has something to learn)."""

import math

VOCAB = 65


def corpus(torch, n=20000, seed=1234):
    """A fixed token stream: a repeating pattern with 10% random noise."""
    g = torch.Generator().manual_seed(seed)
    pattern = torch.arange(n) * 7 % VOCAB
    noise = torch.randint(0, VOCAB, (n,), generator=g)
    keep = torch.rand(n, generator=g) < 0.9
    return torch.where(keep, pattern, noise)


def _windows(torch, data, batch, block, step, seed):
    g = torch.Generator().manual_seed(seed + step)
    ix = torch.randint(0, len(data) - block - 1, (batch,), generator=g)
    x = torch.stack([data[i:i + block] for i in ix.tolist()])
    y = torch.stack([data[i + 1:i + block + 1] for i in ix.tolist()])
    return x, y


def make_mlp(torch, batch=32, block=3, n_embd=64, hidden=512):
    """Bengio-style MLP: Embedding -> concatenate the context -> Linear ->
    tanh -> Linear, predicting the next character."""
    nn = torch.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, n_embd)
            self.fc1 = nn.Linear(block * n_embd, hidden)
            self.fc2 = nn.Linear(hidden, VOCAB)

        def forward(self, idx, targets=None):
            x = self.emb(idx).view(idx.shape[0], -1)
            logits = self.fc2(torch.tanh(self.fc1(x)))
            loss = None if targets is None else nn.functional.cross_entropy(logits, targets)
            return logits, loss

    data = corpus(torch)

    def batch_fn(step):
        x, y = _windows(torch, data, batch, block + 1, step, 99)
        return x[:, :block], x[:, block]

    return MLP(), batch_fn


def make_gpt(torch, batch=32, block=32, n_embd=64, n_head=4, n_layer=4):
    """A nanoGPT-style causal transformer: token and position embeddings,
    pre-LayerNorm blocks with attention written out (matmul, masked_fill,
    softmax) and a GELU MLP, a final LayerNorm and a linear head."""
    nn = torch.nn
    F = nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.register_buffer("bias", torch.tril(torch.ones(block, block))
                                 .view(1, 1, block, block))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.c_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, n_embd)
            self.wpe = nn.Embedding(block, n_embd)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, VOCAB, bias=False)

        def forward(self, idx, targets=None):
            B, T = idx.size()
            pos = torch.arange(0, T, dtype=torch.long)
            x = self.wte(idx) + self.wpe(pos)
            for blk in self.h:
                x = blk(x)
            logits = self.lm_head(self.ln_f(x))
            loss = None if targets is None else F.cross_entropy(
                logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss

    data = corpus(torch)
    return GPT(), lambda step: _windows(torch, data, batch, block, step, 7)


def make_gru(torch, batch=32, block=32, n_embd=64, hidden=128):
    """A character GRU: Embedding -> GRU (batch first) -> Linear."""
    nn = torch.nn

    class CharGRU(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, n_embd)
            self.rnn = nn.GRU(n_embd, hidden, batch_first=True)
            self.head = nn.Linear(hidden, VOCAB)

        def forward(self, idx, targets=None):
            out, _ = self.rnn(self.emb(idx))
            logits = self.head(out)
            loss = None if targets is None else nn.functional.cross_entropy(
                logits.reshape(-1, VOCAB), targets.reshape(-1))
            return logits, loss

    data = corpus(torch)
    return CharGRU(), lambda step: _windows(torch, data, batch, block, step, 11)


MODELS = {"mlp": make_mlp, "gpt": make_gpt, "gru": make_gru}


def train_step(model, opt, x, y):
    """One ordinary training step; returns the loss as a float."""
    _, loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()
