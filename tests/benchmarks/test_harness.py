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


def test_rows_with_the_ratio_to_the_fastest_peer_and_their_table(capsys):
    runners = [("keras_bert (xla off)", "keras_bert", None),
               ("keras_bert (xla on)", "keras_bert", None),
               ("keras_hub (xla off)", "keras_hub", None), ("hf_torch", "hf_torch", None)]
    rows = harness.rows_with_ratio("fp32", runners, [10.0, 12.0, 6.0, 8.0], "examples_per_s")
    assert [r["model"] for r in rows][-1] == "ratio ours / fastest peer"
    assert rows[-1]["examples_per_s"] == 12.0 / 8.0 and rows[3]["examples_per_s"] == 8.0
    alone = harness.rows_with_ratio("fp32", runners[:1], [10.0], "examples_per_s")
    assert alone[-1]["examples_per_s"] is None
    harness.print_table(rows + alone, "examples_per_s", "examples/s", 26)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"| {'precision':14} | {'model':26} | {'examples/s':>10} |"
    assert lines[1] == f"|{'-' * 16}|{'-' * 28}|{'-' * 12}|"
    assert lines[3] == f"| {'fp32':14} | {'keras_bert (xla on)':26} | {'12.00':>10} |"
    assert lines[6] == f"| {'fp32':14} | {'ratio ours / fastest peer':26} | {'1.50x':>10} |"
    assert lines[-1].endswith("|        n/a |")


def test_every_package_a_contender_needs_is_named_where_it_is_pinned():
    import re

    from benchmarks.common import contenders, embed_contenders
    from tests.dependencies import PACKAGES

    needed = {module for table in (contenders.NEEDS, embed_contenders.NEEDS, harness.PEERS)
              for modules in table.values() for module in modules}
    assert needed <= set(harness.PACKAGES)
    shared = set(harness.PACKAGES) & set(PACKAGES)  # worded as the tests word them
    assert {m: harness.PACKAGES[m] for m in shared} == {m: PACKAGES[m] for m in shared}
    for module, where in harness.PACKAGES.items():
        pinned = re.match(r"(\S+) \((requirements[\w-]*\.txt)", where)
        if pinned:  # the distribution has a line of its own in that file
            lines = (harness.REPO / pinned[2]).read_text().splitlines()
            assert any(re.match(rf"{re.escape(pinned[1])}\b", line) for line in lines), module
