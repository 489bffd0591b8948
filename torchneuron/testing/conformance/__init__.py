"""Operator conformance: PyTorch's OpInfo database run on the ``neuron`` backend.

    python -m torchneuron.conformance                 # report: compile/eager x float32/bfloat16
    python -m torchneuron.conformance --check          # compare with the expectations file

``opinfo`` runs one entry in one mode; ``pool`` runs many in worker processes
that survive crashes; ``expectations`` reads and checks the checked-in file of
expected results; ``report`` prints the pass-rate table.
"""
