"""The seed example: a Linear layer on the emulated Trainium device, after only `import torch`.

The `neuron` device is registered by torchneuron's `torch.backends` entry point
when torch is imported (set TORCH_DEVICE_BACKEND_AUTOLOAD=0 and `import torchneuron`
to register it explicitly instead).

    python examples/seed.py
"""

import torch

model = torch.nn.Linear(10, 1)
model = model.to("neuron")
input_data = torch.randn(1, 10, device="neuron")
output = model(input_data)
print(output)  # tensor([[...]], device='neuron:0', grad_fn=<AddmmBackward0>)
