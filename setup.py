"""Build of the neuron device's native layer (``torchneuron.device._C``).

Everything else about the package lives in pyproject.toml. The extension is
built against the torch that pip installs for the build (pinned to the same
version as the runtime dependency, so the C++ ABI matches).
"""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(
    ext_modules=[
        CppExtension(
            name="torchneuron.device._C",
            sources=["csrc/neuron_device.cpp"],
            extra_compile_args=["-O2"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
