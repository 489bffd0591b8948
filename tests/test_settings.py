"""settings: one set of switch words, choices, and errors that name the variable."""

from __future__ import annotations

import pytest

from torchneuron import settings
from torchneuron.errors import TorchNeuronError
from torchneuron.settings import SettingsError, env_choice, env_flag, env_text

NAME = "TORCHNEURON_TEST_SETTING"


@pytest.mark.parametrize("word", ["1", "true", "TRUE", " yes ", "On"])
def test_true_words(monkeypatch, word):
    monkeypatch.setenv(NAME, word)
    assert env_flag(NAME) is True


@pytest.mark.parametrize("word", ["0", "false", "False", "no", "OFF"])
def test_false_words(monkeypatch, word):
    monkeypatch.setenv(NAME, word)
    assert env_flag(NAME, default=True) is False


@pytest.mark.parametrize("word", ["", "  "])
def test_blank_is_the_default(monkeypatch, word):
    monkeypatch.setenv(NAME, word)
    assert env_flag(NAME, default=True) is True
    assert env_flag(NAME, default=False) is False


def test_unset_is_the_default(monkeypatch):
    monkeypatch.delenv(NAME, raising=False)
    assert env_flag(NAME) is False
    assert env_flag(NAME, default=True) is True
    assert env_text(NAME, "fallback") == "fallback"


def test_malformed_switch_names_the_variable(monkeypatch):
    monkeypatch.setenv(NAME, "maybe")
    with pytest.raises(SettingsError, match=f"{NAME}='maybe' is not a switch") as caught:
        env_flag(NAME)
    assert isinstance(caught.value, TorchNeuronError) and isinstance(caught.value, ValueError)


def test_choice_is_case_insensitive_and_spelled_as_the_table(monkeypatch):
    monkeypatch.setenv(NAME, " TRN3 ")
    assert env_choice(NAME, ("trn2", "trn3"), "trn2") == "trn3"
    monkeypatch.setenv(NAME, "")
    assert env_choice(NAME, ("trn2", "trn3"), "trn2") == "trn2"
    monkeypatch.setenv(NAME, "trn9")
    with pytest.raises(SettingsError, match=f"{NAME}='trn9' is not one of trn2, trn3"):
        env_choice(NAME, ("trn2", "trn3"), "trn2")


def test_every_variable_is_named_once():
    constants = {
        value
        for name, value in vars(settings).items()
        if name.isupper()
        and isinstance(value, str)
        and value.startswith(("NEURON_", "TORCHNEURON_"))
    }
    assert constants == set(settings.VARIABLES)


@pytest.mark.parametrize("name", settings.FLAGS + settings.COUNTS)
def test_check_environment_names_each_malformed_switch_and_count(monkeypatch, name):
    for other in settings.FLAGS + settings.COUNTS:
        monkeypatch.delenv(other, raising=False)
    settings.check_environment()
    monkeypatch.setenv(name, "maybe")
    with pytest.raises(SettingsError, match=f"{name}='maybe' is not a") as caught:
        settings.check_environment()
    assert caught.value.variable == name


@pytest.mark.parametrize(("value", "count"), [("3", 3), (" 12 ", 12), ("", 5)])
def test_count_reads_whole_numbers(monkeypatch, value, count):
    monkeypatch.setenv(NAME, value)
    assert settings.env_count(NAME, 5) == count


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "many"])
def test_malformed_count_names_the_variable(monkeypatch, value):
    monkeypatch.setenv(NAME, value)
    with pytest.raises(SettingsError, match=f"{NAME}='{value}' is not a whole number >= 1"):
        settings.env_count(NAME)
