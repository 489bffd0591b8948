"""Topology from environment variables (read once, until a reset), and core lookup."""

from __future__ import annotations

import pytest

from torchneuron.errors import TorchNeuronError
from torchneuron.runtime import get_core, reset_runtime
from torchneuron.settings import SettingsError
from torchneuron.target.hardware import GiB, MiB
from torchneuron.target.topology import (
    build_topology,
    parse_byte_size,
    reset_topology,
    set_topology,
    topology,
)


def test_default_is_one_trn2_chip_at_lnc2():
    topo = topology()
    assert (topo.target, topo.lnc, topo.cores) == ("trn2", 2, (0, 1, 2, 3))
    assert topo.device_count == 4
    assert topo.hbm_bytes_per_core == 24 * GiB
    assert not topo.hbm_overridden


def test_lnc1_doubles_cores_and_halves_hbm(monkeypatch):
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    topo = topology()
    assert topo.device_count == 8
    assert topo.hbm_bytes_per_core == 12 * GiB


def test_trn3_target(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn3")
    topo = topology()
    assert (topo.target, topo.lnc, topo.device_count) == ("trn3", 2, 4)
    assert topo.hbm_bytes_per_core == 36 * GiB
    assert topo.chip.core_version == "NeuronCore-v4"


@pytest.mark.parametrize(
    ("value", "cores"),
    [
        ("0-3", (0, 1, 2, 3)),
        ("1,3", (1, 3)),
        ("2", (2,)),
        ("0-1,4", (0, 1, 4)),
        (" 5 - 6 ", (5, 6)),
        ("63", (63,)),
    ],
)
def test_visible_cores(monkeypatch, value, cores):
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", value)
    assert topology().cores == cores
    assert topology().device_count == len(cores)


@pytest.mark.parametrize(
    ("var", "value", "fragment"),
    [
        ("NEURON_PLATFORM_TARGET_OVERRIDE", "trn9", "is not one of trn2, trn3"),
        ("NEURON_LOGICAL_NC_CONFIG", "3", "one of [1, 2] for trn2"),
        ("NEURON_LOGICAL_NC_CONFIG", "two", "one of [1, 2]"),
        ("NEURON_RT_VISIBLE_CORES", "3-1", "range 3-1 is empty"),
        ("NEURON_RT_VISIBLE_CORES", "a", "logical core ids"),
        ("NEURON_RT_VISIBLE_CORES", "1,1", "without repeats"),
        ("NEURON_RT_VISIBLE_CORES", "64", "each below 64"),
        ("TORCHNEURON_HBM_BYTES_PER_CORE", "0", "positive byte count"),
        ("TORCHNEURON_HBM_BYTES_PER_CORE", "-5", "positive byte count"),
        ("TORCHNEURON_HBM_BYTES_PER_CORE", "12XB", "positive byte count"),
    ],
)
def test_invalid_values_name_variable_and_value(monkeypatch, var, value, fragment):
    monkeypatch.setenv(var, value)
    with pytest.raises(SettingsError) as info:
        topology()
    assert isinstance(info.value, TorchNeuronError) and isinstance(info.value, ValueError)
    message = str(info.value)
    assert f"{var}={value!r}" in message
    assert fragment in message
    with pytest.raises(SettingsError, match=var):  # a malformed value is not cached
        get_core(0)


@pytest.mark.parametrize("value", ["TRN3", "Trn3", " trn3 "])
def test_target_is_case_insensitive(monkeypatch, value):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", value)
    assert topology().target == "trn3"
    assert get_core(0).target == "trn3"


def test_visible_core_limit_follows_lnc():
    # LNC=1 exposes 8 logical cores per chip, so a 16-chip node has ids up to 127
    assert build_topology(
        {"NEURON_LOGICAL_NC_CONFIG": "1", "NEURON_RT_VISIBLE_CORES": "127"}
    ).cores == (127,)
    with pytest.raises(ValueError, match="each below 128"):
        build_topology({"NEURON_LOGICAL_NC_CONFIG": "1", "NEURON_RT_VISIBLE_CORES": "128"})


@pytest.mark.parametrize(
    ("value", "nbytes"),
    [
        ("1048576", 1048576),
        ("64MiB", 64 * MiB),
        ("1.5GiB", int(1.5 * GiB)),
        ("500MB", 500_000_000),
        ("2 k", 2048),
    ],
)
def test_hbm_override_units(monkeypatch, value, nbytes):
    assert parse_byte_size(value) == nbytes
    monkeypatch.setenv("TORCHNEURON_HBM_BYTES_PER_CORE", value)
    topo = topology()
    assert topo.hbm_bytes_per_core == nbytes and topo.hbm_overridden
    assert get_core(0).hbm.capacity == nbytes


def test_topology_is_read_once_until_reset(monkeypatch):
    first = topology()
    assert topology() is first
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "bogus")
    assert topology() is first and first.lnc == 2  # as CUDA reads CUDA_VISIBLE_DEVICES
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    reset_topology()
    second = topology()
    assert second is not first and second.lnc == 1
    monkeypatch.delenv("NEURON_LOGICAL_NC_CONFIG")
    assert topology().lnc == 1
    reset_runtime()
    assert topology().lnc == 2


def test_set_topology_replaces_the_environment_until_reset(monkeypatch):
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "0")
    core = get_core(0)
    chosen = build_topology(
        {"NEURON_PLATFORM_TARGET_OVERRIDE": "trn3", "NEURON_LOGICAL_NC_CONFIG": "1"}
    )
    set_topology(chosen)
    assert topology() is chosen
    assert (chosen.target, chosen.lnc, chosen.device_count) == ("trn3", 1, 8)
    assert get_core(0) is not core and get_core(0).target == "trn3"
    assert core.target == "trn2"  # cores already handed out keep their topology
    reset_runtime()
    assert topology().cores == (0,) and topology().target == "trn2"
    with pytest.raises(TypeError, match="expects a Topology"):
        set_topology({"NEURON_LOGICAL_NC_CONFIG": "1"})


def test_get_core_returns_the_same_core_while_topology_holds(monkeypatch):
    core = get_core(1)
    assert get_core(1) is core
    assert core.index == 1 and core.logical_core_id == 1
    assert core.physical_core_ids == (2, 3)
    assert core.hbm.capacity == 24 * GiB
    monkeypatch.setenv("TORCHNEURON_HBM_BYTES_PER_CORE", "1MiB")
    assert get_core(1) is core  # the environment is read once
    reset_runtime()
    assert get_core(1) is not core
    assert get_core(1).hbm.capacity == MiB


def test_get_core_maps_index_to_visible_core(monkeypatch):
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "2")
    core = get_core(0)
    assert core.logical_core_id == 2
    assert core.description == "NeuronCore 0 (trn2, LNC=2, logical core 2)"


def test_get_core_out_of_range(monkeypatch):
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "1,3")
    with pytest.raises(IndexError, match=r"index 2 is out of range: 2 cores are visible .*'1,3'"):
        get_core(2)
    with pytest.raises(IndexError, match="index -1"):
        get_core(-1)
