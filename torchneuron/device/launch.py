"""``Launch``: one compiled op call queued for a device's execution thread.

The compiled route (``compiled.run_compiled``) builds a launch on the calling thread
once it knows the call's program and output metadata: the new output tensors are
allocated there (so the op returns at once), each input and output is captured as a
host alias (``_C.capture_launch``: the metadata is pinned and the storage kept alive
until the op has run, whatever the caller does to the tensors meanwhile), and the
launch is submitted to ``streams``. ``run()``, on the execution thread, reads the
inputs' bytes, executes the program and writes the results into the outputs.

A fuser (``streams.install_fuser``) receives launches before they are queued; the
fields below are what it may read. ``inputs`` and ``outputs`` are the device tensors
(identity tells which launch produced which tensor); ``host_inputs`` and
``host_outputs`` are what ``run()`` reads and writes (kept in the native layer,
``_C.HostViews``, and made Python lists only when asked for).
"""

from __future__ import annotations

from typing import Any


class Launch:
    """A compiled op call ready to run.

    - ``device``: the device index; ``stream``: the ``stream_api.Stream`` it was issued on;
    - ``name``: the op (``aten::add.Tensor``); ``key``: its compiled-cache key;
    - ``entry``: the ``compiled.Entry`` (program, output metadata); ``plan``: the ``OpPlan``;
    - ``values``: the call's normalized arguments;
    - ``inputs``: the call's tensors in program order (device tensors, and CPU 0-d
      operands); ``scalars``: the lifted Python scalars as numpy 0-d arrays, after them;
    - ``outputs``: the tensors the program writes, in program output order: the
      computed new outputs, then the mutated arguments (their non-empty ones);
    - ``views``: the captured host views ``run()`` uses (``_C.HostViews``), also as
      the lists ``host_inputs`` / ``host_outputs`` (the same tensor objects each time).
    """

    __slots__ = (
        "_host_lists",
        "device",
        "entry",
        "inputs",
        "key",
        "name",
        "outputs",
        "plan",
        "scalars",
        "stream",
        "values",
        "views",
    )

    def __init__(
        self,
        device: int,
        stream: Any,
        name: str,
        key: tuple,
        entry: Any,
        plan: Any,
        values: list,
        inputs: list,
        scalars: list,
        outputs: list,
        views: Any,
    ) -> None:
        self.device = device
        self.stream = stream
        self.name = name
        self.key = key
        self.entry = entry
        self.plan = plan
        self.values = values
        self.inputs = inputs
        self.scalars = scalars
        self.outputs = outputs
        self.views = views
        self._host_lists = None

    def _lists(self) -> tuple[list, list]:
        if self._host_lists is None:  # made once: the same tensor objects each time
            self._host_lists = (self.views.inputs, self.views.outputs)
        return self._host_lists

    @property
    def host_inputs(self) -> list:
        return self._lists()[0]

    @property
    def host_outputs(self) -> list:
        return self._lists()[1]

    def release_tensors(self) -> None:
        """Drop the Python tensors (queued: the fuser has looked at them, and the run
        reads and writes through ``views``, which keep the memory). A result nothing
        else holds can then be taken over by its consumer: autograd makes a new
        gradient the parameter's ``.grad`` without a copy only when it holds it alone."""
        self.inputs = self.outputs = self.values = ()

    def run(self) -> None:
        """Execute the program on the inputs as they are now; write the outputs."""
        views = self.views
        arrays = views.arrays(self.entry.dense_orders)
        if self.scalars:
            arrays.extend(self.scalars)
        views.write(self.entry.program.execute(self.device, arrays))

    def __repr__(self) -> str:
        return f"Launch({self.name} on neuron:{self.device})"
