"""``neuronc`` given hostile or mistaken input: one ``neuronc: error:`` line, a non-zero
status, no traceback, and no file left behind; a closed stdout ends the command quietly.

The command lines run as real processes (``tests/cli/neuronc.py``): one child forked per
case from a runner that imported the CLI once (a start costs seconds, a fork milliseconds).
"""

import json
import os
import subprocess
import zipfile

import numpy as np
import pytest
import torch

from tests.cli.neuronc import console_script
from torchneuron import cli
from torchneuron.cli.files import FileProblem, atomic_write
from torchneuron.cli.run import signature_of, use_chip_of
from torchneuron.neff import NeffError
from torchneuron.target import topology

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

# case -> (command line, exit status, words the one error line must hold: the file or
# argument at fault, and what is wrong with it). Run in a folder holding the files made
# by the `folder` fixture.
CASES = {
    "-o is a folder": (["compile", "affine.pt2", "-o", "adir"], 1, ["-o adir", "is a folder"]),
    "-o under a file": (
        ["compile", "affine.pt2", "-o", "afile/x.neff"],
        1,
        ["-o afile/x.neff", "afile is a file"],
    ),
    "-o unwritable": (
        ["profile", "affine.neff", "-o", "/proc/x.json"],
        1,
        ["-o /proc/x.json", "cannot write"],
    ),
    "profile -o is a folder": (["profile", "affine.neff", "-o", "adir"], 1, ["-o adir"]),
    "--output-dir is a file": (
        ["run", "affine.neff", "--input", "x=x.npy", "--output-dir", "afile"],
        1,
        ["--output-dir afile", "not a folder"],
    ),
    "golden update --dir is a file": (
        ["golden", "update", "affine.pt2", "--dir", "afile"],
        1,
        ["--dir afile", "not a folder"],
    ),
    "golden check --dir is a file": (
        ["golden", "check", "affine.pt2", "--dir", "afile"],
        1,
        ["--dir afile"],
    ),
    "--dump-dir is a file": (
        ["compile", "affine.pt2", "-o", "o.neff", "--dump-dir", "afile"],
        1,
        ["--dump-dir afile"],
    ),
    "input is .npz": (
        ["run", "affine.neff", "--input", "x=x.npz"],
        2,
        ["--input x=x.npz", ".npz archive"],
    ),
    "input is empty": (
        ["run", "affine.neff", "--input", "x=empty.npy"],
        2,
        ["x=empty.npy", "empty"],
    ),
    "input is a NEFF": (
        ["run", "affine.neff", "--input", "x=affine.neff"],
        2,
        ["x=affine.neff", "not a .npy file"],
    ),
    "input is truncated": (
        ["run", "affine.neff", "--input", "x=truncated.npy"],
        2,
        ["x=truncated.npy", "cannot read the .npy file"],
    ),
    "input is a folder": (
        ["run", "affine.neff", "--input", "x=adir"],
        2,
        ["x=adir", "cannot read"],
    ),
    "input is missing": (
        ["run", "affine.neff", "--input", "x=nope.npy"],
        2,
        ["x=nope.npy", "cannot read"],
    ),
    "input of the wrong dtype": (
        ["run", "affine.neff", "--input", "x=int32.npy"],
        2,
        ["x=int32.npy", "dtype int32", "float32"],
    ),
    "input of the wrong shape": (
        ["run", "affine.neff", "--input", "x=five.npy"],
        2,
        ["x=five.npy", "shape [5]", "[4]"],
    ),
    "input name not in the signature": (
        ["run", "affine.neff", "--input", "y=x.npy"],
        2,
        ["--input y", "no such input", "x"],
    ),
    "input not given": (["run", "affine.neff"], 2, ["missing input(s): x"]),
    "run --core 99": (
        ["run", "affine.neff", "--input", "x=x.npy", "--core", "99"],
        2,
        ["--core 99"],
    ),
    "run --core -1": (
        ["run", "affine.neff", "--input", "x=x.npy", "--core", "-1"],
        2,
        ["--core -1"],
    ),
    "profile --core 99": (["profile", "affine.neff", "--core", "99"], 2, ["--core 99"]),
    "profile --core -1": (["profile", "affine.neff", "--core", "-1"], 2, ["--core -1"]),
    "--kernels -1": (["inspect", "affine.neff", "--kernels", "-1"], 2, ["--kernels '-1'"]),
    "--passes empty": (
        ["compile", "affine.pt2", "-o", "o.neff", "--passes", ""],
        2,
        ["--passes ''", "empty pipeline", "fold-constants"],
    ),
    "--passes unknown": (
        ["compile", "affine.pt2", "-o", "o.neff", "--passes", "no-such-pass"],
        2,
        ["--passes 'no-such-pass'", "unknown pass", "fold-constants"],
    ),
    "--passes leaving non-StableHLO ops": (
        ["compile", "affine.pt2", "-o", "o.neff", "--passes", "cse"],
        1,
        ["arith.constant"],
    ),
    "estimate --passes empty": (["estimate", "affine.pt2", "--passes", " "], 2, ["--passes ' '"]),
    ".pt2 that is a zip of something else": (
        ["compile", "junk.pt2", "-o", "o.neff"],
        1,
        ["junk.pt2", "not a torch.export program", "not in a subdirectory"],
    ),
    ".pt2 that is a NEFF": (["compile", "neff.pt2", "-o", "o.neff"], 1, ["neff.pt2", "not a zip"]),
    ".pt2 that is a folder": (["compile", "adir", "-o", "o.neff"], 1, ["adir", "is a folder"]),
    ".pt2 missing": (["estimate", "nope.pt2"], 1, ["nope.pt2", "no such file"]),
    ".neff of random bytes": (["inspect", "random.neff"], 1, ["random.neff", "not a NEFF"]),
    ".neff that is a .pt2": (["run", "pt2.neff"], 1, ["pt2.neff", "not a NEFF"]),
    ".neff that is a folder": (["inspect", "adir"], 1, ["adir"]),
    ".neff missing": (["profile", "nope.neff"], 1, ["nope.neff"]),
    "--from artifact is a folder": (
        ["compile", "--from", "stablehlo", "adir", "-o", "o.neff"],
        1,
        ["adir", "cannot read"],
    ),
    "--from artifact is not text": (
        ["compile", "--from", "stablehlo", "x.npy", "-o", "o.neff"],
        2,
        ["x.npy", "not MLIR text"],
    ),
    "--weights missing": (
        ["compile", "--from", "stablehlo", "afile", "-o", "o.neff", "--weights", "nope.neff"],
        1,
        ["nope.neff"],
    ),
}
if not IS_ROOT:  # root reads every file whatever its mode
    CASES |= {
        "unreadable .neff": (["inspect", "locked.neff"], 1, ["locked.neff"]),
        "unreadable .pt2": (["compile", "locked.pt2", "-o", "o.neff"], 1, ["locked.pt2"]),
        "unreadable input": (["run", "affine.neff", "--input", "x=locked.npy"], 2, ["locked.npy"]),
        "unwritable -o folder": (
            ["compile", "affine.pt2", "-o", "locked/x.neff"],
            1,
            ["-o locked/x.neff", "Permission denied"],
        ),
        "unwritable golden folder": (
            ["golden", "update", "affine.pt2", "--dir", "locked/golden"],
            1,
            ["--dir locked/golden", "Permission denied"],
        ),
    }
# Commands that work, run in the same batch: they must write their files and leave no
# temporary behind either.
SUCCESSES = {
    "run writes outputs": ["run", "affine.neff", "--input", "x=x.npy", "--output-dir", "out/run"],
    "profile writes a trace": ["profile", "affine.neff", "-o", "out/trace.json"],
    "inspect --kernels 0": ["inspect", "affine.neff", "--kernels", "0"],
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")

    class Affine(torch.nn.Module):
        def forward(self, x):
            return x * 3.0 + 1.0

    program = folder / "affine.pt2"
    torch.export.save(torch.export.export(Affine(), (torch.ones(4),)), str(program))
    assert cli.main(["compile", str(program), "-o", str(folder / "affine.neff")]) == 0
    (folder / "adir").mkdir()
    (folder / "afile").write_text("a file\n")
    np.save(folder / "x.npy", np.arange(4, dtype=np.float32))
    np.savez(folder / "x.npz", x=np.arange(4, dtype=np.float32))
    (folder / "empty.npy").write_bytes(b"")
    (folder / "truncated.npy").write_bytes((folder / "x.npy").read_bytes()[:-4])
    np.save(folder / "int32.npy", np.arange(4, dtype=np.int32))
    np.save(folder / "five.npy", np.arange(5, dtype=np.float32))
    (folder / "random.neff").write_bytes(np.random.default_rng(0).bytes(4096))
    (folder / "neff.pt2").write_bytes((folder / "affine.neff").read_bytes())
    (folder / "pt2.neff").write_bytes(program.read_bytes())
    with zipfile.ZipFile(folder / "junk.pt2", "w") as archive:
        archive.writestr("a.txt", "not a program")
    if not IS_ROOT:
        for name, source in (("locked.neff", "affine.neff"), ("locked.pt2", "affine.pt2")):
            (folder / name).write_bytes((folder / source).read_bytes())
            (folder / name).chmod(0)
        (folder / "locked.npy").write_bytes((folder / "x.npy").read_bytes())
        (folder / "locked.npy").chmod(0)
        (folder / "locked").mkdir(mode=0o500)
    return folder


@pytest.fixture(scope="module")
def results(neuronc, folder):
    """name -> completed neuronc process of every case and success."""
    names = list(CASES) + list(SUCCESSES)
    argvs = [CASES[name][0] for name in CASES] + [SUCCESSES[name] for name in SUCCESSES]
    return {
        name: neuronc.run(*argv, check=False, cwd=folder)
        for name, argv in zip(names, argvs, strict=True)
    }


@pytest.mark.parametrize("case", list(CASES))
def test_each_hostile_input_is_one_error_line_naming_the_culprit(results, case):
    _, status, words = CASES[case]
    result = results[case]
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("neuronc: error: "), result.stderr
    assert "internal error" not in lines[0]
    for word in words:
        assert word in lines[0]
    assert result.returncode == status, lines[0]


def test_failed_and_successful_commands_leave_no_temporary_file(results, folder):
    for name in SUCCESSES:
        assert results[name].returncode == 0, results[name].stderr
    leftovers = [p.name for p in folder.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []
    assert not (folder / "o.neff").exists() and not (folder / "adir" / "x.neff").exists()
    assert not list((folder / "adir").iterdir())
    np.testing.assert_array_equal(
        np.load(folder / "out" / "run" / "output0.npy"), np.arange(4, dtype=np.float32) * 3 + 1
    )
    assert json.loads((folder / "out" / "trace.json").read_text())["traceEvents"]


def test_a_closed_stdout_ends_the_command_quietly(folder):
    """`neuronc inspect x.neff | head -1`: the reader is gone before the output is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        completed = console_script(
            "inspect",
            "affine.neff",
            "--kernels",
            "all",
            check=False,
            stdout=write_end,
            stderr=subprocess.PIPE,
            env={"PYTHONWARNINGS": "ignore"},
            cwd=folder,
        )
    finally:
        os.close(write_end)
    assert completed.stderr == ""
    assert completed.returncode == cli.CLOSED_PIPE_STATUS == 141


# -- in-process: what no file on disk can reach ---------------------------------------


@pytest.mark.parametrize(
    "manifest,words",
    [
        ({}, ["x.neff", "no signature"]),
        ({"signature": {"inputs": []}}, ["no list of outputs"]),
        ({"signature": {"inputs": [7], "outputs": []}}, ["inputs[0]", "not an object"]),
        (
            {
                "signature": {
                    "inputs": [{"name": "x", "dtype": "bogus", "shape": []}],
                    "outputs": [],
                }
            },
            ["inputs[0] (x)", "unknown dtype 'bogus'"],
        ),
        (
            {"signature": {"inputs": [{"name": "x", "dtype": ["f"], "shape": []}], "outputs": []}},
            ["unknown dtype"],
        ),
        (
            {
                "signature": {
                    "inputs": [],
                    "outputs": [{"name": "../evil", "dtype": "float32", "shape": [1]}],
                }
            },
            ["outputs[0]", "'../evil' is not a plain name"],
        ),
        (
            {
                "signature": {
                    "inputs": [{"name": "x", "dtype": "float32", "shape": [-1]}],
                    "outputs": [],
                }
            },
            ["shape [-1]"],
        ),
        (
            {
                "signature": {
                    "inputs": [{"name": "x", "dtype": "float32", "shape": []}] * 2,
                    "outputs": [],
                }
            },
            ["repeat a name"],
        ),
    ],
)
def test_run_refuses_a_malformed_signature_with_the_neff_error(manifest, words):
    with pytest.raises(NeffError) as caught:
        signature_of(manifest, "x.neff")
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize(
    "manifest,words",
    [
        ({"target": "trn9"}, ["x.neff", "target 'trn9'"]),
        ({"target": ["trn2"]}, ["target ['trn2']"]),
        ({"target": "trn2", "lnc": 7}, ["lnc 7"]),
        ({"target": "trn2", "lnc": "2"}, ["lnc '2'"]),
    ],
)
def test_profile_checks_the_chip_a_neff_asks_for_before_switching(monkeypatch, manifest, words):
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    monkeypatch.delenv("NEURON_LOGICAL_NC_CONFIG", raising=False)
    topology.reset_topology()
    before = topology.topology()
    try:
        with pytest.raises(NeffError) as caught:
            use_chip_of(manifest, "x.neff")
        for word in words:
            assert word in str(caught.value)
        assert topology.topology() is before
    finally:
        topology.reset_topology()


def test_profile_emulates_the_neff_s_chip_without_touching_the_environment(monkeypatch):
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    monkeypatch.delenv("NEURON_LOGICAL_NC_CONFIG", raising=False)
    before = dict(os.environ)
    try:
        use_chip_of({"target": "trn3", "lnc": 1})
        assert (topology.topology().target, topology.topology().lnc) == ("trn3", 1)
        assert dict(os.environ) == before
        # The user's own setting wins over the manifest's.
        monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
        topology.reset_topology()
        use_chip_of({"target": "trn3", "lnc": 1})
        assert topology.topology().target == "trn2"
    finally:
        topology.reset_topology()


def test_atomic_write_removes_its_temporary_file_on_any_failure(tmp_path, monkeypatch):
    target = tmp_path / "out.neff"
    target.write_bytes(b"old")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, b"new", "-o")
    monkeypatch.undo()

    def failed(source, destination):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", failed)
    with pytest.raises(FileProblem, match=r"-o .*out.neff: cannot write \(Permission denied\)"):
        atomic_write(target, b"new", "-o")
    assert [p.name for p in tmp_path.iterdir()] == ["out.neff"]
    assert target.read_bytes() == b"old"


@pytest.mark.parametrize(
    "raised,status,text",
    [
        (KeyboardInterrupt(), 130, "neuronc: error: interrupted"),
        (MemoryError(), 1, "neuronc: error: out of host memory"),
        (
            KeyError("bogus"),
            70,
            "neuronc: error: internal error (KeyError: 'bogus'); please report",
        ),
    ],
)
def test_main_turns_every_escape_into_one_line(monkeypatch, capsys, raised, status, text):
    def handler(args):
        raise raised

    monkeypatch.setattr(cli, "_inspect", handler)
    assert cli.main(["inspect", "x.neff"]) == status
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(text), lines


def test_traceback_flag_shows_an_internal_error_as_python_does(monkeypatch):
    def handler(args):
        raise KeyError("bogus")

    monkeypatch.setattr(cli, "_inspect", handler)
    with pytest.raises(KeyError):
        cli.main(["--traceback", "inspect", "x.neff"])
