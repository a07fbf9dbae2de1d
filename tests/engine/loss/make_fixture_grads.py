"""Writes the Python LibreYOLO's gradients of one training step on the shared model fixture.

The public Python LibreYOLO (the project environment's, scripts/python-env.sh) loads
shared/fixtures/models/libreyolo9t_seed1234.pt, runs the train-mode forward with the fixture
input and targets (the same call that gave libreyolo9t_meta.json's losses), calls backward on
total_loss as its trainer does, and records per parameter the gradient's L2 norm and its dot
product with the parameter itself (sign- and direction-sensitive, and needs no shared random
generator). tests/engine/loss/fixture_loss_test.cc compares LibreYOLO9 in the engine against it.

usage: PYTHON make_fixture_grads.py SHARED_DIR OUT_JSON
"""
import json
import sys

import numpy as np
import torch

torch.manual_seed(0)
torch.set_num_threads(1)
from libreyolo import LibreYOLO9  # noqa: E402

shared, out_path = sys.argv[1], sys.argv[2]
models = shared + "/fixtures/models/"
net = LibreYOLO9(model_path=models + "libreyolo9t_seed1234.pt", size="t", device="cpu").model
net.train()
x = torch.from_numpy(np.load(models + "input_2x3x320x320.npy"))
t = torch.from_numpy(np.load(models + "targets_2x3x5.npy"))
out = net(x, targets=t)
out["total_loss"].backward()
params = {}
for name, p in net.named_parameters():
    if p.grad is None:
        continue
    g = p.grad.detach().double()
    params[name] = {"norm": float(g.norm()), "dot_param": float((g * p.detach().double()).sum())}
doc = {
    "made_by": "tests/engine/loss/make_fixture_grads.py with libreyolo "
               + __import__("libreyolo").__version__ + ", torch " + torch.__version__,
    "losses": {k: float(out[k].detach()) for k in ("total_loss", "box_loss", "dfl_loss", "cls_loss")},
    "global_norm": sum(v["norm"] ** 2 for v in params.values()) ** 0.5,
    "params": params,
}
with open(out_path, "w") as f:
    json.dump(doc, f, indent=0, sort_keys=True)
    f.write("\n")
print(f"{len(params)} parameters, global gradient norm {doc['global_norm']:.6g}")
