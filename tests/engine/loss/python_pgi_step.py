"""One LibreYOLO9 training step with the PGI auxiliary branch, by the Python LibreYOLO itself.

The public Python LibreYOLO (the project environment's, scripts/python-env.sh) loads
shared/fixtures/models/libreyolo9t_seed1234.pt (which holds no aux.* tensors), attaches the
branch as its train() does when the checkpoint has none (LibreYOLO9Model.enable_aux at the
default aux_weight 0.25) right after torch.manual_seed(0), saves the branch's fresh tensors
(aux.*, aux_head.*) to OUT_DIR/aux_init.pt, runs the train-mode forward with the fixture input
and targets (the call its trainer makes), and calls backward on total_loss as its trainer does.
It prints one JSON object: the aux weight, the main head's and the auxiliary head's losses
apart (captured at LibreYOLO9Model.combine_aux_losses, the tool's own combination) and
combined, and per parameter the gradient's L2 norm and its dot product with the parameter.
tests/engine/loss/pgi_step_test.cc compares the engine's step against it.

usage: PYTHON python_pgi_step.py SHARED_DIR OUT_DIR
"""
import json
import sys

import numpy as np
import torch

torch.set_num_threads(1)
from libreyolo import LibreYOLO9  # noqa: E402

shared, out_dir = sys.argv[1], sys.argv[2]
models = shared + "/fixtures/models/"
net = LibreYOLO9(model_path=models + "libreyolo9t_seed1234.pt", size="t", device="cpu").model
torch.manual_seed(0)
net.enable_aux(weight=0.25)
branch = {k: v.detach().clone() for k, v in net.state_dict().items()
          if k.startswith("aux.") or k.startswith("aux_head.")}
torch.save(branch, out_dir + "/aux_init.pt")

captured = {}
combine = net.combine_aux_losses


def capture(main, aux):
    captured["main"], captured["aux"] = main, aux
    return combine(main, aux)


net.combine_aux_losses = capture
net.train()
x = torch.from_numpy(np.load(models + "input_2x3x320x320.npy"))
t = torch.from_numpy(np.load(models + "targets_2x3x5.npy"))
out = net(x, targets=t)
out["total_loss"].backward()

keys = ("total_loss", "box_loss", "dfl_loss", "cls_loss")
params = {}
for name, p in net.named_parameters():
    if p.grad is None:
        continue
    g = p.grad.detach().double()
    params[name] = {"norm": float(g.norm()), "dot_param": float((g * p.detach().double()).sum())}
doc = {
    "made_by": "tests/engine/loss/python_pgi_step.py with libreyolo "
               + __import__("libreyolo").__version__ + ", torch " + torch.__version__,
    "aux_weight": net.aux_weight,
    "aux_tensors": len(branch),
    "losses": {part: {k: float(d[k].detach()) for k in keys}
               for part, d in (("main", captured["main"]), ("aux", captured["aux"]),
                               ("combined", out))},
    "global_norm": sum(v["norm"] ** 2 for v in params.values()) ** 0.5,
    "params": params,
}
print(json.dumps(doc, sort_keys=True))
