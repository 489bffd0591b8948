"""Build of the neuron device's native layer (``torchneuron.device._C``).

Everything else about the package lives in pyproject.toml. The extension is
built against the torch that pip installs for the build (pinned to the same
version as the runtime dependency, so the C++ ABI matches).
"""

import os

import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

# Kineto's headers (the torch.profiler plugin in csrc/neuron_profiler.cpp include them
# by their bare names, as torch's own headers do).
KINETO_INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include", "kineto")

setup(
    ext_modules=[
        CppExtension(
            name="torchneuron.device._C",
            sources=["csrc/neuron_device.cpp", "csrc/neuron_profiler.cpp"],
            include_dirs=[KINETO_INCLUDE],
            extra_compile_args=["-O2"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
