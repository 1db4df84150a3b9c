"""A torchvision ResNet-18 checkpoint (torch.save(resnet18().state_dict()))
loads into Rust's models::resnet18 and gives torchvision's outputs: the
torchvision_resnet18 example run on files torch writes here. Needs torch,
torchvision and FERROTORCH_EXAMPLES (the built examples' folder;
scripts/test.sh sets it); skipped otherwise."""
import os
import subprocess
import warnings

import pytest


def test_torchvision_resnet18_checkpoint_into_the_rust_model(tmp_path):
    torch = pytest.importorskip("torch")
    tv = pytest.importorskip("torchvision")
    ex = os.environ.get("FERROTORCH_EXAMPLES")
    if not ex or not os.path.exists(os.path.join(ex, "torchvision_resnet18")):
        pytest.skip("set FERROTORCH_EXAMPLES to the built examples (scripts/test.sh does)")
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    m = tv.models.resnet18().eval()
    for mod in m.modules():  # running statistics away from 0/1
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.1, 0.1)
            mod.running_var.uniform_(0.5, 1.5)
    torch.save(m.state_dict(), tmp_path / "resnet18.pt")
    x = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        torch.save({"x": x, "y": m(x)}, tmp_path / "io.pt")
    r = subprocess.run([os.path.join(ex, "torchvision_resnet18"), str(tmp_path / "resnet18.pt"),
                        str(tmp_path / "io.pt")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "max |ferrotorch - torchvision|" in r.stdout
