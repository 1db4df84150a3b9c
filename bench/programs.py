"""Issue 49's real-program set: six small training programs in the style of
the third-party programs that stopped on missing library surface, each
written against the library module it is given (``torch`` or
``ferrotorch``), so the same code runs on both:

- ``cnn``: PyTorch's examples/mnist: a CNN with Dropout, Adadelta and
  StepLR, its device picked through ``torch.accelerator``;
- ``lm``: examples/word_language_model: an LSTM language model with tied
  embedding/decoder weights over variable-length sentences through
  ``pack_padded_sequence``, gradient clipping, and its weights saved and
  loaded back (``torch.save`` of the state dict: whole-module
  ``torch.save(model)`` belongs to the PyTorch-files issue);
- ``vae``: examples/vae with ``torch.distributions`` (``Normal.rsample``
  and ``kl_divergence``);
- ``per_sample``: per-sample gradients with ``torch.func`` (``vmap`` of
  ``grad`` over ``functional_call``), applied by hand;
- ``fx``: an fx pass: a traced model with an ``fx.wrap``-ped helper whose
  ``x * sigmoid(x)`` pattern ``replace_pattern`` turns into ``silu``,
  then trained;
- ``gan``: examples/dcgan's structure (``nn.parallel.data_parallel``
  when there are GPUs) as small MLPs, with BCELoss and Adam(0.5, 0.999).

Each ``run(torch, steps)`` seeds the library, trains for ``steps`` steps
and returns the loss of every step; ``make(torch)`` returns ``(step_fn,
state)`` for timing one step (bench/real_programs.py). The data are drawn
from the library's own generators, which give the same numbers in both.
"""

import io
import types

# ---- cnn: examples/mnist ----


def _cnn(torch):
    nn, F = torch.nn, torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3, 1)
            self.conv2 = nn.Conv2d(8, 16, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(16 * 12 * 12, 32)
            self.fc2 = nn.Linear(32, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = torch.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = self.dropout2(x)
            return F.log_softmax(self.fc2(x), dim=1)

    torch.manual_seed(1)
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    model = Net().to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.7)
    g = torch.Generator().manual_seed(7)
    data = torch.rand(64, 1, 28, 28, generator=g)
    target = torch.randint(0, 10, (64,), generator=g)

    def step(i):
        model.train()
        lo = (i * 16) % 64
        x, y = data[lo:lo + 16].to(device), target[lo:lo + 16].to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if i % 2 == 1:
            scheduler.step()
        return loss.item()

    return step


# ---- lm: examples/word_language_model ----


def _lm(torch):
    nn = torch.nn
    rnn = torch.nn.utils.rnn
    ntoken, ninp, nhid = 50, 16, 16

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.2)
            self.encoder = nn.Embedding(ntoken, ninp, padding_idx=0)
            self.rnn = nn.LSTM(ninp, nhid, num_layers=2, dropout=0.2, batch_first=True)
            self.decoder = nn.Linear(nhid, ntoken)
            self.decoder.weight = self.encoder.weight  # tied weights

        def forward(self, tokens, lengths):
            emb = self.drop(self.encoder(tokens))
            packed = rnn.pack_padded_sequence(emb, lengths, batch_first=True, enforce_sorted=False)
            out, _ = self.rnn(packed)
            out, _ = rnn.pad_packed_sequence(out, batch_first=True, total_length=tokens.size(1))
            return self.decoder(self.drop(out))

    torch.manual_seed(2)
    model = RNNModel()
    criterion = nn.CrossEntropyLoss(ignore_index=0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    g = torch.Generator().manual_seed(11)
    sentences = []
    for _ in range(24):
        n = int(torch.randint(3, 12, (1,), generator=g))
        sentences.append(torch.randint(1, ntoken, (n,), generator=g))

    def batch(i):
        chosen = [sentences[(i * 4 + k) % len(sentences)] for k in range(4)]
        lengths = torch.tensor([len(s) - 1 for s in chosen])
        inputs = rnn.pad_sequence([s[:-1] for s in chosen], batch_first=True)
        targets = rnn.pad_sequence([s[1:] for s in chosen], batch_first=True)
        return inputs, lengths, targets

    def step(i):
        model.train()
        inputs, lengths, targets = batch(i)
        optimizer.zero_grad()
        logits = model(inputs, lengths)
        loss = criterion(logits.reshape(-1, ntoken), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        return loss.item()

    def reload_matches():
        """The weights saved and loaded into a new model give its outputs."""
        buf = io.BytesIO()
        torch.save(model.state_dict(), buf)
        buf.seek(0)
        again = RNNModel()
        again.load_state_dict(torch.load(buf))
        model.eval()
        again.eval()
        inputs, lengths, _ = batch(0)
        same = bool(torch.equal(model(inputs, lengths), again(inputs, lengths)))
        return same and again.decoder.weight is again.encoder.weight

    step.reload_matches = reload_matches
    return step


# ---- vae: examples/vae with torch.distributions ----


def _vae(torch):
    nn, F = torch.nn, torch.nn.functional
    D = torch.distributions

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(64, 32)
            self.fc21 = nn.Linear(32, 4)
            self.fc22 = nn.Linear(32, 4)
            self.fc3 = nn.Linear(4, 32)
            self.fc4 = nn.Linear(32, 64)

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def forward(self, x):
            mu, logvar = self.encode(x)
            q = D.Normal(mu, torch.exp(0.5 * logvar))
            z = q.rsample()
            recon = torch.sigmoid(self.fc4(F.relu(self.fc3(z))))
            return recon, q

    torch.manual_seed(3)
    model = VAE()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(5)
    data = (torch.rand(48, 64, generator=g) > 0.5).float()
    prior = D.Normal(torch.zeros(4), torch.ones(4))

    def step(i):
        model.train()
        x = data[(i * 16) % 48:(i * 16) % 48 + 16]
        optimizer.zero_grad()
        recon, q = model(x)
        bce = F.binary_cross_entropy(recon, x, reduction="sum")
        kld = D.kl_divergence(q, prior).sum()
        loss = (bce + kld) / x.size(0)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


# ---- per_sample: torch.func ----


def _per_sample(torch):
    nn, F = torch.nn, torch.nn.functional
    from_func = torch.func

    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 3))
    params = {k: v.detach() for k, v in model.named_parameters()}
    g = torch.Generator().manual_seed(9)
    data = torch.randn(32, 10, generator=g)
    targets = torch.randint(0, 3, (32,), generator=g)

    def loss_one(p, x, y):
        out = from_func.functional_call(model, p, (x.unsqueeze(0),))
        return F.cross_entropy(out, y.unsqueeze(0))

    per_sample_grad = from_func.vmap(from_func.grad(loss_one), in_dims=(None, 0, 0))

    def step(i):
        x, y = data[(i * 8) % 32:(i * 8) % 32 + 8], targets[(i * 8) % 32:(i * 8) % 32 + 8]
        grads = per_sample_grad(params, x, y)
        # clip each sample's gradient to norm 1 (DP-SGD's step), then average
        norms = torch.stack([g.reshape(8, -1).norm(dim=1) for g in grads.values()]).norm(dim=0)
        factor = (1.0 / norms).clamp(max=1.0)
        for k in params:
            shape = (8,) + (1,) * (grads[k].dim() - 1)
            params[k] = params[k] - 0.5 * (grads[k] * factor.reshape(shape)).mean(0)
        with torch.no_grad():
            out = from_func.functional_call(model, params, (x,))
        return F.cross_entropy(out, y).item()

    return step


# ---- fx: wrap and replace_pattern ----

_FX_SOURCE = '''
def clamp_scale(x, limit):
    # Python control flow on a value symbolic tracing cannot see
    if limit > 0:
        return x.clamp(-limit, limit)
    return x

fx.wrap("clamp_scale")


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        h = self.fc1(x)
        h = h * torch.sigmoid(h)
        return self.fc2(clamp_scale(h, 3.0))


def pattern(x):
    return x * torch.sigmoid(x)


def replacement(x):
    return torch.nn.functional.silu(x)
'''


def _fx(torch):
    mod = types.ModuleType(f"fx_program_{torch.__name__}")
    mod.__dict__.update(torch=torch, nn=torch.nn, fx=torch.fx)
    exec(compile(_FX_SOURCE, "<fx_program>", "exec"), mod.__dict__)  # noqa: S102 (the program's own source)
    torch.manual_seed(6)
    gm = torch.fx.symbolic_trace(mod.Block())
    matches = torch.fx.replace_pattern(gm, mod.pattern, mod.replacement)
    assert len(matches) == 1
    assert any(n.op == "call_function" and getattr(n.target, "__name__", "") == "clamp_scale"
               for n in gm.graph.nodes)
    optimizer = torch.optim.SGD(gm.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(13)
    data = torch.randn(32, 8, generator=g)
    target = torch.randn(32, 2, generator=g)

    def step(i):
        x, y = data[(i * 8) % 32:(i * 8) % 32 + 8], target[(i * 8) % 32:(i * 8) % 32 + 8]
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(gm(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


# ---- gan: examples/dcgan's structure ----


def _gan(torch):
    nn = torch.nn
    ngpu = torch.accelerator.device_count()
    nz = 8

    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.ngpu = ngpu
            self.main = nn.Sequential(nn.Linear(nz, 32), nn.BatchNorm1d(32), nn.ReLU(True), nn.Linear(32, 16),
                                      nn.Tanh())

        def forward(self, input):
            if input.is_cuda and self.ngpu > 1:
                return nn.parallel.data_parallel(self.main, input, range(self.ngpu))
            return self.main(input)

    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.ngpu = ngpu
            self.main = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2, inplace=True), nn.Linear(32, 1),
                                      nn.Sigmoid())

        def forward(self, input):
            if input.is_cuda and self.ngpu > 1:
                return nn.parallel.data_parallel(self.main, input, range(self.ngpu))
            return self.main(input).view(-1, 1).squeeze(1)

    def weights_init(m):
        if type(m).__name__ == "Linear":
            nn.init.normal_(m.weight.data, 0.0, 0.02)
        elif type(m).__name__ == "BatchNorm1d":
            nn.init.normal_(m.weight.data, 1.0, 0.02)
            nn.init.constant_(m.bias.data, 0)

    torch.manual_seed(8)
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    optD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    g = torch.Generator().manual_seed(21)
    real = torch.randn(64, 16, generator=g).tanh()

    def step(i):
        x = real[(i * 16) % 64:(i * 16) % 64 + 16]
        netD.zero_grad()
        label = torch.full((16,), 1.0)
        errD_real = criterion(netD(x), label)
        errD_real.backward()
        noise = torch.randn(16, nz)
        fake = netG(noise)
        label.fill_(0.0)
        errD_fake = criterion(netD(fake.detach()), label)
        errD_fake.backward()
        optD.step()
        netG.zero_grad()
        label.fill_(1.0)
        errG = criterion(netD(fake), label)
        errG.backward()
        optG.step()
        return (errD_real + errD_fake).item() + errG.item()

    return step


PROGRAMS = {"cnn": _cnn, "lm": _lm, "vae": _vae, "per_sample": _per_sample, "fx": _fx, "gan": _gan}


def make(torch, name):
    """The program's ``step(i) -> loss`` (its model, data and optimizer made)."""
    return PROGRAMS[name](torch)


def run(torch, name, steps):
    """The losses of ``steps`` training steps of program ``name``."""
    step = make(torch, name)
    return [step(i) for i in range(steps)]
