"""Inputs of python_delegation_test.cc (issue 38 §4), made by the Python LibreYOLO itself.

    make_delegated_inputs.py OUT_DIR

OUT_DIR/yolox_n.pt and OUT_DIR/dfine_n.pt: native checkpoints (the tool's own `save`: its
state dict with model_family, size, nc, names beside it) of a YOLOX-n and a D-FINE-n from random
init (model_path=None builds the network without a download) with 2 classes; OUT_DIR/data/: a
detection dataset of 4 train and 4 val images (96x96 noise, one box each) and its data.yaml.
Offline and seeded.
"""
import os
import sys

import numpy as np
import torch
from PIL import Image


def main() -> None:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    from libreyolo import LibreDFINE, LibreYOLOX

    LibreYOLOX(model_path=None, size="n", nb_classes=2, device="cpu").save(f"{out}/yolox_n.pt")
    LibreDFINE(model_path=None, size="n", nb_classes=2, device="cpu").save(f"{out}/dfine_n.pt")
    root = f"{out}/data"
    rng = np.random.default_rng(0)
    for split in ("train", "val"):
        os.makedirs(f"{root}/images/{split}", exist_ok=True)
        os.makedirs(f"{root}/labels/{split}", exist_ok=True)
        for i in range(4):
            pixels = (rng.random((96, 96, 3)) * 255).astype("uint8")
            Image.fromarray(pixels).save(f"{root}/images/{split}/img{i}.jpg")
            with open(f"{root}/labels/{split}/img{i}.txt", "w") as f:
                f.write(f"{i % 2} 0.5 0.5 0.3 0.4\n")
    with open(f"{root}/data.yaml", "w") as f:
        f.write(f"path: {root}\ntrain: images/train\nval: images/val\nnc: 2\nnames: [a, b]\n")


if __name__ == "__main__":
    main()
