"""Load the weights examples/mlp (Go) saved into the same model built with
the Python package, and check it gives the Go model's outputs:
`python check.py PREFIX` (PREFIX.safetensors, PREFIX.json)."""
import json
import sys

import ferrotorch as torch
from ferrotorch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 32)
        self.fc2 = nn.Linear(32, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main(prefix):
    model = MLP()
    model.load_state_dict(torch.load(prefix + ".safetensors"))
    with open(prefix + ".json") as f:
        ref = json.load(f)
    x = torch.tensor(ref["input"]).view(-1, 2)
    with torch.no_grad():
        out = model(x).flatten().tolist()
    worst = max(abs(a - b) for a, b in zip(out, ref["output"]))
    assert worst < 1e-5, f"Python and Go disagree by {worst}"
    print(f"Python loads the Go model's weights: outputs agree (max diff {worst:.1e})")


if __name__ == "__main__":
    main(sys.argv[1])
