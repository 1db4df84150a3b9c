"""Write crates/ferrotorch-python/python/ferrotorch/nn/_torch_paths.py: the
module torch defines each public torch.nn class in, so torch.save(model)
names ferrotorch's classes by the paths torch's loaders look up (Note
[Allow-listed classes]). Run with a Python that has torch:

    /path/to/torch-venv/bin/python scripts/gen_torch_paths.py
"""
import os

import torch

paths = {}
for name in sorted(dir(torch.nn)):
    cls = getattr(torch.nn, name)
    if isinstance(cls, type) and (issubclass(cls, torch.nn.Module) or cls is torch.nn.Parameter):
        paths[name] = cls.__module__
out = os.path.join(os.path.dirname(__file__), "..", "crates", "ferrotorch-python", "python", "ferrotorch", "nn",
                   "_torch_paths.py")
with open(out, "w") as f:
    f.write(f'"""Where torch {torch.__version__.split("+")[0]} defines each public torch.nn class '
            '(scripts/gen_torch_paths.py made this file)."""\n\nPATHS = {\n')
    for k, v in paths.items():
        f.write(f"    {k!r}: {v!r},\n")
    f.write("}\n")
print(len(paths), "classes")
