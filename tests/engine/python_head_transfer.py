#!/usr/bin/env python3
"""What the Python LibreYOLO does to a checkpoint's tensors when it trains on a dataset.

Usage: python_head_transfer.py CHECKPOINT DATA_YAML [SAVE_AS]

Runs the Python tool's own path for `libreyolo profile run DATA --weights CHECKPOINT`
(libreyolo/cli/commands/profile.py: `LibreYOLO(model_path=..., size=...)`, then
`model.train(data=...)` with its defaults), up to the moment its trainer would start: the
trainer class is replaced by one that takes the model it is handed and trains nothing. Whatever
`train()` did before that (seed, `_rebuild_for_new_classes` when the dataset's nc differs, PGI
aux branch) is therefore the real code's doing.

Prints one JSON object: the checkpoint's and the dataset's class counts, and every tensor of the
main model (not the training-only `aux.*` / `aux_head.*` branch, listed apart) as
  kept:           same shape as in the checkpoint, same values
  reset:          same shape, other values (the head's bias prior, `DDetect._init_bias`)
  reinitialised:  another shape than in the checkpoint, or not in it
with shapes, and the values of every reset or re-initialised tensor. SAVE_AS: the model as
train() left it (the dataset's classes, the checkpoint's tower width, its PGI branch) saved with
the tool's own `save()`, i.e. what a fine-tune on this dataset starts from and writes.
"""

import json
import sys

import torch


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    checkpoint, data = sys.argv[1], sys.argv[2]
    save_as = sys.argv[3] if len(sys.argv) == 4 else None

    from libreyolo import LibreYOLO
    from libreyolo.models.yolo9 import model as yolo9_model
    from libreyolo.utils.serialization import load_untrusted_torch_file

    captured = {}

    class CapturingTrainer:
        """Stands in for YOLO9Trainer: keeps the model train() built, trains nothing."""

        def __init__(self, **kwargs):
            captured["state"] = {
                k: v.detach().clone() for k, v in kwargs["model"].state_dict().items()
            }
            captured["num_classes"] = kwargs["num_classes"]

        def train(self):
            return {}

    yolo9_model.LibreYOLO9._trainer_class = lambda self: CapturingTrainer
    model = LibreYOLO(model_path=checkpoint, size="t", device="cpu")
    checkpoint_nc = int(model.nb_classes)
    # The arguments `libreyolo profile run` passes that could matter before the trainer starts;
    # everything else (seed, aux_weight, pretrained) is train()'s default, as there.
    model.train(data=data, epochs=1, batch=2, imgsz=64, workers=0, device="cpu",
                project="/tmp/unused-python-head-transfer", name="x", exist_ok=True)

    if save_as:
        model.save(save_as)

    loaded = load_untrusted_torch_file(checkpoint, map_location="cpu", context="reference")
    source = loaded.get("model", loaded) if isinstance(loaded, dict) else loaded
    source = {k.replace("detect.", "head.", 1) if k.startswith("detect.") else k: v
              for k, v in source.items()}

    def values(t):
        return [float(x) for x in t.flatten().tolist()]

    out = {"checkpoint_nc": checkpoint_nc, "dataset_nc": int(captured["num_classes"]),
           "kept": [], "reset": [], "reinitialised": [], "training_only": [],
           "values": {}}
    for name, tensor in captured["state"].items():
        shape = list(tensor.shape)
        if name.startswith("aux.") or name.startswith("aux_head."):
            out["training_only"].append({"name": name, "shape": shape})
            continue
        src = source.get(name)
        if src is None or list(src.shape) != shape:
            out["reinitialised"].append({"name": name, "shape": shape})
            out["values"][name] = values(tensor)
        elif torch.equal(src.to(tensor.dtype), tensor):
            out["kept"].append({"name": name, "shape": shape})
        else:
            out["reset"].append({"name": name, "shape": shape})
            out["values"][name] = values(tensor)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
