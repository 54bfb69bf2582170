"""benchmarks/common/harness.py: the start, shared flags and last line of every benchmark."""

import json

import pytest
from absl import flags

from benchmarks.common import harness


def test_start_sets_the_environment_before_tensorflow(monkeypatch):
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS", raising=False)
    harness.start("2")
    assert harness.os.environ["TF_CPP_MIN_LOG_LEVEL"] == "2"
    assert harness.os.environ["TF_ENABLE_ONEDNN_OPTS"] == "1"
    harness.start("3")  # the caller's setting stays
    assert harness.os.environ["TF_CPP_MIN_LOG_LEVEL"] == "2"
    harness.start("3", override=True)
    assert harness.os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"


def test_shared_flags_with_the_script_defaults():
    values = flags.FlagValues()
    harness.define_flags(batch_size=8, peers=["keras_hub"], help={"rounds": "Rounds."},
                         rounds=2, flag_values=values)
    values(["prog", "--peers=keras_hub,hf_torch"])
    assert values.batch_size == 8 and values.rounds == 2
    assert values.peers == ["keras_hub", "hf_torch"]
    assert values["rounds"].help == "Rounds."
    assert values["batch_size"].help == harness.HELP["batch_size"]
    assert "seq_length" not in values  # only the flags asked for


def test_unknown_or_mistyped_shared_flag_is_named():
    with pytest.raises(ValueError, match="'batch' is not a shared benchmark flag"):
        harness.define_flags(batch=8, flag_values=flags.FlagValues())
    with pytest.raises(TypeError, match="--rounds: a list or an integer default, got '3'"):
        harness.define_flags(rounds="3", flag_values=flags.FlagValues())


def test_summary_is_one_json_line(capsys):
    harness.print_summary({"results": [{"model": "keras_bert", "tokens_per_s": 1.5}]})
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert json.loads(out) == {"results": [{"model": "keras_bert", "tokens_per_s": 1.5}]}
