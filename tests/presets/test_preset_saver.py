"""keras_bert/presets/preset_saver.py: every save_to_preset goes through one PresetSaver, and a
save over an earlier preset gives a reader the old preset or the new one, never a mix: on a
local disk even when the writer is killed (kill -9), and on an object store (ram://) or a
file system that cannot swap directories, a clear error while the files are replaced."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from keras_bert import BertEncoder, dir_swap, storage
from keras_bert.checkpoints import CheckpointError
from keras_bert.presets import load_preset
from keras_bert.presets.preset_saver import WRITERS, PresetSaver
from tests.models.tiny import VOCAB, tiny_encoder
from tests.presets.writer_process import SAVE_MOMENTS

REPO = pathlib.Path(__file__).resolve().parents[2]
MIXED = "holds files of two different saves"


def _old_and_new(new_vocabulary=False):
    """Two encoders whose every weight differs, under configs that differ (the old one: relu,
    eps 1e-3, with a vocabulary; the new one: GELU, eps 1e-12, with another vocabulary or
    none)."""
    old = tiny_encoder(hidden_act="relu", layer_norm_eps=1e-3)
    old.vocabulary, old.do_lower_case = list(VOCAB), True
    new = tiny_encoder()
    new.set_canonical_weights({k: v + 1.0 for k, v in old.get_canonical_weights().items()})
    if new_vocabulary:
        new.vocabulary, new.do_lower_case = VOCAB[:5] + VOCAB[5:][::-1], True
    return old, new


def _state(encoder):
    return encoder.bert_config, encoder.get_canonical_weights(), encoder.vocabulary


def _which(path, old, new):
    """"old" or "new": which of the two presets a reader of ``path`` gets (config, every
    weight and the vocabulary alike), or "refused" (the error for a half-replaced
    directory). Anything else, a mix above all, fails the test."""
    try:
        preset = load_preset(path)
        got = (preset.config, preset.weights(), preset.vocab_path and storage.read_text(
            preset.vocab_path).split("\n")[:-1])
    except CheckpointError as e:
        assert MIXED in str(e), e
        return "refused"
    assert preset.format == "keras_bert"  # never read as a Google checkpoint
    for name, (config, weights, tokens) in (("old", old), ("new", new)):
        if got[0] == config and (got[2] or None) == tokens and got[1].keys() == weights.keys() \
                and all(np.array_equal(got[1][k], weights[k]) for k in weights):
            return name
    raise AssertionError(f"{path} is neither the old preset nor the new one")


def _writer(source, target, moment):
    return subprocess.Popen(
        [sys.executable, "-m", "tests.presets.writer_process", "save", source, target, moment],
        cwd=REPO, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def test_a_save_over_a_preset_killed_at_any_moment_leaves_the_old_or_the_new(tmp_path):
    old, new = _old_and_new()
    source = new.save_to_preset(str(tmp_path / "source" / "new"))
    targets = {}
    for moment in SAVE_MOMENTS:
        targets[moment] = old.save_to_preset(str(tmp_path / "runs" / moment))
        (tmp_path / "runs" / moment / "notes.txt").write_text("a file of the user's")
    # One writer per moment, all at once; each stops there and is killed (SIGKILL).
    writers = {moment: _writer(source, targets[moment], moment) for moment in SAVE_MOMENTS}
    seen = {}
    try:
        for moment, writer in writers.items():
            line = writer.stdout.readline()
            assert line == "paused\n", writer.communicate()[1][-3000:]
            seen[moment] = _which(targets[moment], _state(old), _state(new))
    finally:
        for writer in writers.values():
            writer.kill()
            writer.wait()
    assert seen == {"writing": "old", "swapping": "old", "swapped": "new"}
    assert {moment: _which(path, _state(old), _state(new)) for moment, path in targets.items()} \
        == seen
    for path in targets.values():
        assert (pathlib.Path(path) / "notes.txt").read_text() == "a file of the user's"
        assert not [name for name in os.listdir(path) if name.startswith(".tmp-")]
    # What the killed writers left beside the targets (their new directories, and the old
    # one swapped out) is swept by the next writer there.
    assert len(list((tmp_path / "runs").glob(".tmp-*"))) == len(SAVE_MOMENTS)
    new.save_to_preset(targets["writing"])
    assert sorted(os.listdir(tmp_path / "runs")) == sorted(SAVE_MOMENTS)
    assert _which(targets["writing"], _state(old), _state(new)) == "new"


class _Killed(BaseException):
    """Stands for kill -9: raised at a chosen step of a save. (The save's own clean-up runs,
    unlike after a kill, but it only removes its temporaries: what readers of the target
    see is what a kill there leaves.)"""


def _steps_on(target, monkeypatch, kill_at=None):
    """Records the saves' moves into ``target`` and removals there (the steps a reader can
    see), raising `_Killed` before the step numbered ``kill_at``."""
    steps = []
    move, remove = storage._move_file, storage.remove

    def step(what, path):
        if os.path.dirname(path) == target:
            if len(steps) == kill_at:
                raise _Killed(what)
            steps.append(f"{what} {os.path.basename(path)}")

    monkeypatch.setattr(storage, "_move_file", lambda a, b: (step("move", b), move(a, b))[1])
    monkeypatch.setattr(storage, "remove", lambda path: (step("remove", path), remove(path))[1])
    return steps


@pytest.mark.parametrize("new_vocabulary, order", [
    # keras_bert.json first (a reader checks the rest against it from then on), the files
    # the new preset does not have (the old vocabulary) removed, the checkpoint's index last.
    (False, ["move keras_bert.json", "remove vocab.txt", "move bert_config.json",
             "move bert_model.ckpt.data-00000-of-00001", "move bert_model.ckpt.index"]),
    (True, ["move keras_bert.json", "move bert_config.json",
            "move bert_model.ckpt.data-00000-of-00001", "move vocab.txt",
            "move bert_model.ckpt.index"]),
])
@pytest.mark.parametrize("where", ["ram", "local without the swap"])
def test_a_save_replacing_files_one_by_one_is_refused_until_it_is_complete(
        tmp_path, monkeypatch, where, new_vocabulary, order):
    old, new = _old_and_new(new_vocabulary)
    if where == "ram":
        root = "ram://test_preset_saver/one_by_one"
        storage.rmtree(root)
    else:
        root = str(tmp_path)
        monkeypatch.setattr(dir_swap, "_renameat2", lambda: None)  # a system without it
    with monkeypatch.context() as patch:
        steps = _steps_on(f"{root}/whole", patch)
        old.save_to_preset(f"{root}/whole")
        steps.clear()
        new.save_to_preset(f"{root}/whole")
    assert steps == order
    seen = []
    for kill_at in range(len(steps)):
        target = f"{root}/killed-{kill_at}"
        old.save_to_preset(target)
        with monkeypatch.context() as patch:
            _steps_on(target, patch, kill_at=kill_at)
            with pytest.raises(_Killed):
                new.save_to_preset(target)
        seen.append(_which(target, _state(old), _state(new)))
    assert seen == ["old"] + ["refused"] * (len(steps) - 1)
    assert _which(f"{root}/whole", _state(old), _state(new)) == "new"
    storage.rmtree(root)


def test_the_saver_writes_the_formats_of_its_table_and_refuses_others(tmp_path):
    assert list(WRITERS) == ["keras_bert", "google", "huggingface", "sentence_transformers"]
    with pytest.raises(ValueError, match=r"Unknown preset format 'onnx'; presets are saved in "
                                         r"'keras_bert', 'google', 'huggingface', "
                                         r"'sentence_transformers'\."):
        PresetSaver(tmp_path, format="onnx")
    encoder = tiny_encoder()
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match=r"A preset is a directory; this is a file: "
                                                 r".*file'"):
        PresetSaver(tmp_path / "file").save_encoder(encoder)
    assert PresetSaver(tmp_path / "p").save_encoder(encoder) == str(tmp_path / "p")
    loaded = BertEncoder.from_preset(str(tmp_path / "p"))
    np.testing.assert_array_equal(loaded.get_canonical_weights()["bert/embeddings/word_embeddings"],
                                  encoder.get_canonical_weights()["bert/embeddings/word_embeddings"])


@pytest.mark.parametrize("root", ["local", "ram"])
def test_each_format_replaces_an_earlier_save_in_another(tmp_path, root):
    """A save in Google's or Hugging Face's layout over a preset in another takes its place
    whole: the earlier layout's files (keras_bert.json, bert_config.json, config.json), which
    would be read first or beside the new ones, go; a training run's other files stay. On
    ram:// (gs://) too, written through tf.io.gfile."""
    from keras_bert.checkpoints import detect_format

    old, new = _old_and_new(new_vocabulary=True)
    directory = str(tmp_path / "p") if root == "local" else "ram://keras_bert_saver/formats"
    storage.rmtree(directory)
    storage.makedirs(directory)
    storage.write_text(os.path.join(directory, "train.log"), "epoch 1\n")
    order = ["keras_bert", "google", "huggingface", "keras_bert", "huggingface", "google"]
    for i, fmt in enumerate(order):
        encoder = new if i % 2 else old
        PresetSaver(directory, format=fmt).save_encoder(encoder)
        assert detect_format(directory) == fmt
        files = set(storage.listdir(directory))
        assert "train.log" in files
        assert ("keras_bert.json" in files) == (fmt == "keras_bert")
        assert ("bert_config.json" in files) == (fmt != "huggingface")
        assert ("config.json" in files) == (fmt == "huggingface")
        loaded = BertEncoder.from_preset(directory)
        got, want = _state(loaded), _state(encoder)
        assert got[0] == want[0] and got[2] == want[2], fmt
        for name, value in want[1].items():
            np.testing.assert_array_equal(got[1][name], value, err_msg=f"{fmt}: {name}")
    storage.rmtree(directory)
