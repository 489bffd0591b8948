"""The main demo: eager `neuron` device, torch.compile(backend="neuron"), and neuronc.

python examples/demo.py
"""

import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import numpy as np
import torch  # nothing else: the device and the backend arrive through entry points

# 1. Eager mode: the seed example, one compiled NEFF per op on an emulated NeuronCore.
model = torch.nn.Linear(10, 1)
model = model.to("neuron")
input_data = torch.randn(1, 10, device="neuron")
output = model(input_data)
print("eager:", output)

# 2. torch.compile: the whole graph (forward and backward) compiled to NEFFs.
torch.manual_seed(0)
mlp = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.GELU(), torch.nn.Linear(32, 1))
fast = torch.compile(mlp, backend="neuron")
x = torch.randn(4, 10)
out = fast(x)
out.sum().backward()
print("torch.compile: max |neuron - cpu| =", (out - mlp(x)).abs().max().item())
print("torch.compile: grad of first weight, norm", mlp[0].weight.grad.norm().item())

# 3. neuronc: compile a saved torch.export program to a NEFF, inspect it, run it.
neuronc = str(Path(sysconfig.get_path("scripts")) / "neuronc")
with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    torch.export.save(torch.export.export(mlp.eval(), (x,)), str(tmp / "mlp.pt2"))
    subprocess.run(
        [neuronc, "compile", tmp / "mlp.pt2", "-o", tmp / "mlp.neff", "--target", "trn2"],
        check=True,
    )
    subprocess.run([neuronc, "inspect", tmp / "mlp.neff"], check=True)
    np.save(tmp / "x.npy", x.numpy())
    subprocess.run(
        [neuronc, "run", tmp / "mlp.neff", "--input", tmp / "x.npy", "--output-dir", tmp / "out"],
        check=True,
    )
    result = np.load(tmp / "out" / "output0.npy")
    print(
        "neuronc run: max |neuron - cpu| =", float(np.abs(result - mlp(x).detach().numpy()).max())
    )
sys.exit(0)
