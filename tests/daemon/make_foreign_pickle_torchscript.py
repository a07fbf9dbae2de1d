"""Makes tests/daemon/fixtures/foreign_constants.torchscript (issue 40 A.9): a real TorchScript
archive (torch.jit.trace of a one-line module, so it has a constants.pkl) whose constants.pkl is
replaced by a foreign pickle that reduces to os.system("touch MARKER"). LibTorch must refuse it
without running it; the daemon's job says so in one line with exit code 2
(daemon_foreign_pickle_test.cc). Run by hand with the project's Python environment:

  $(bash scripts/python-env.sh)/bin/python tests/daemon/make_foreign_pickle_torchscript.py \
      tests/daemon/fixtures/foreign_constants.torchscript
"""
import io
import os
import pickle
import sys
import zipfile

import torch

MARKER = "/tmp/libreyolo-issue40-a9-foreign-pickle-ran"


class Payload:
    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))


class AddOne(torch.nn.Module):
    def forward(self, x):
        return x * 2.0 + torch.tensor([1.0])  # a constant: the archive gets constants.pkl


def main():
    out = sys.argv[1]
    plain = io.BytesIO()
    torch.jit.save(torch.jit.trace(AddOne(), torch.zeros(1)), plain)
    replaced = 0
    with zipfile.ZipFile(plain) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("/constants.pkl"):
                data = pickle.dumps(Payload(), protocol=2)
                replaced += 1
            entry = zipfile.ZipInfo(info.filename, date_time=(2026, 1, 1, 0, 0, 0))
            zout.writestr(entry, data, compress_type=zipfile.ZIP_STORED)
    if replaced != 1:
        sys.exit(f"{out}: expected one constants.pkl in torch.jit.save's archive, found {replaced}")


if __name__ == "__main__":
    main()
