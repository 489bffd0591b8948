"""torchneuron: a PyTorch backend for AWS Trainium2/Trainium3 running on emulated NeuronCores.

Stages (one sub-package each): ``lowering`` (FX -> torch dialect -> StableHLO),
``passes`` (pass manager and our passes), ``neff`` (the container format),
``runtime`` (emulated NeuronCores), ``compiler`` (drivers: stage table,
torch.compile backend, ``neuronc`` CLI).
"""

__version__ = "0.1.0"
