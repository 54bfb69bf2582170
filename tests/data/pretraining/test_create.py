"""create_pretraining_data end to end, beside google-research/bert's own script on real text.

The acceptance point: on the same real corpus (Wikipedia articles) and flags, ours and the
original agree in what they make: the same feature names, dtypes and lengths; instance count
within 5%; mean masked positions per instance within 5%; random-next share within 2 points;
and every masked_lm_ids entry is the token the masking replaced (restored into input_ids,
segments A and B are each a run of the tokenized source text).
"""

import os
import signal

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data.pretraining import create as pretraining_data
from keras_bert.data.pretraining import records as pretraining_records
from keras_bert.data.pretraining.chunks import ChunkEncoder
from keras_bert.data.pretraining.data_options import PretrainingDataOptions
from keras_bert.data.pretraining.text_files import PretrainingDataError
from keras_bert.text import BertTokenizer
from tests.data.pretraining import google_pretraining
from tests.data.pretraining import wiki_corpus as pretraining_corpus

SEQ, PREDICTIONS, DUPE = 64, 10, 5
CORPUS_LINES = 6000
FLAGS = dict(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, dupe_factor=DUPE,
             masked_lm_prob=0.15, short_seq_prob=0.1, random_seed=12345)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Wikipedia, about CORPUS_LINES lines: its articles' sections as documents (many
    documents: each draws its own target length, so few long ones make noisy counts)."""
    documents, lines = [], 0
    for document in pretraining_corpus.wikipedia_sections():
        documents.append(document)
        lines += len(document)
        if lines >= CORPUS_LINES:
            break
    path = tmp_path_factory.mktemp("corpus") / "wiki.txt"
    pretraining_corpus.write_corpus(path, documents)
    return str(path), documents


@pytest.fixture(scope="module")
def small_corpus(corpus, tmp_path_factory):
    """The first ~1,500 lines of that corpus, for the tests that run several times."""
    documents, lines = [], 0
    for document in corpus[1]:
        documents.append(document)
        lines += len(document)
        if lines >= 1500:
            break
    path = tmp_path_factory.mktemp("small") / "wiki.txt"
    pretraining_corpus.write_corpus(path, documents)
    return str(path), documents


@pytest.fixture(scope="module")
def vocab(minilm_path):
    return str(minilm_path / "vocab.txt")


def _read(paths):
    spec = pretraining_records.feature_spec(SEQ, PREDICTIONS)
    dataset = tf.data.TFRecordDataset(paths).batch(1024).map(
        lambda x: tf.io.parse_example(x, spec))
    parts = list(dataset.as_numpy_iterator())
    return {name: np.concatenate([p[name] for p in parts]) for name in spec}


def _raw_features(path):
    """Names, kinds and lengths of the features of a file's first record."""
    record = next(iter(tf.data.TFRecordDataset(path))).numpy()
    example = tf.train.Example.FromString(record)
    out = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        out[name] = (kind, len(getattr(feature, kind).value))
    return out


@pytest.fixture(scope="module")
def made(corpus, vocab, google_bert_path, tmp_path_factory):
    """The original's records and ours from the same corpus and flags."""
    out = tmp_path_factory.mktemp("made")
    theirs = str(out / "original.tfrecord")
    google_pretraining.run_script(google_bert_path, dict(
        input_file=corpus[0], output_file=theirs, vocab_file=vocab, do_lower_case="true",
        **FLAGS))
    ours = [str(out / f"ours-{i}.tfrecord") for i in range(2)]
    options = PretrainingDataOptions(**FLAGS)
    stats = pretraining_data.create_pretraining_data(corpus[0], ours, vocab, options=options)
    return {"theirs": theirs, "ours": ours, "stats": stats}


def test_same_features_as_the_original(made):
    theirs = _raw_features(made["theirs"])
    assert theirs == {
        "input_ids": ("int64_list", SEQ), "input_mask": ("int64_list", SEQ),
        "segment_ids": ("int64_list", SEQ), "masked_lm_positions": ("int64_list", PREDICTIONS),
        "masked_lm_ids": ("int64_list", PREDICTIONS),
        "masked_lm_weights": ("float_list", PREDICTIONS),
        "next_sentence_labels": ("int64_list", 1),
    }
    for path in made["ours"]:
        assert _raw_features(path) == theirs


def test_statistics_agree_with_the_original(made):
    theirs, ours = _read([made["theirs"]]), _read(made["ours"])
    n_theirs, n_ours = len(theirs["input_ids"]), len(ours["input_ids"])
    assert n_ours == made["stats"].instances
    assert n_theirs > 8000  # enough for the shares below to mean something
    assert abs(n_ours / n_theirs - 1) < 0.05, (n_ours, n_theirs)
    masked_theirs = theirs["masked_lm_weights"].sum() / n_theirs
    masked_ours = ours["masked_lm_weights"].sum() / n_ours
    assert abs(masked_ours / masked_theirs - 1) < 0.05, (masked_ours, masked_theirs)
    random_theirs = theirs["next_sentence_labels"].mean()
    random_ours = ours["next_sentence_labels"].mean()
    assert random_theirs > 0.5  # a random next whenever a chunk holds one segment
    assert abs(random_ours - random_theirs) < 0.02, (random_ours, random_theirs)
    for name in ("input_mask", "segment_ids"):  # lengths of sequences and of B
        ratio = ours[name].sum() / n_ours / (theirs[name].sum() / n_theirs)
        assert abs(ratio - 1) < 0.05, (name, ratio)
    # 80% [MASK] among the predictions, in both.
    for features in (theirs, ours):
        rows = np.arange(len(features["input_ids"]))[:, None]
        now = features["input_ids"][rows, features["masked_lm_positions"]]
        share = (now == 103)[features["masked_lm_weights"] > 0].mean()
        assert abs(share - 0.8) < 0.02


class _Source:
    """The corpus tokenized by our tokenizer (documents apart), and where each run of 2 and
    of 4 tokens occurs in it, to find longer runs fast."""

    def __init__(self, documents, vocab):
        lines = BertTokenizer(vocab).tokenize([line for d in documents for line in d])
        ids, ends = [], np.cumsum([len(d) for d in documents])
        for start, end in zip(np.concatenate([[0], ends[:-1]]), ends):
            ids += lines[start:end].flat_values.numpy().tolist() + [-1]
        self.ids = np.array(ids)
        self.starts = {}
        for k in (2, 4):
            for i, key in enumerate(zip(*(ids[j:] for j in range(k)))):
                self.starts.setdefault(key, []).append(i)
        self.tokens = set(ids)

    def holds(self, ids):
        ids = np.asarray(ids)
        if len(ids) < 2:
            return len(ids) == 1 and int(ids[0]) in self.tokens
        key = tuple(ids[:4 if len(ids) >= 4 else 2].tolist())
        for start in self.starts.get(key, ()):
            if np.array_equal(self.ids[start:start + len(ids)], ids):
                return True
        return False


def _check_restored(features, source, limit=None):
    """Puts masked_lm_ids back at masked_lm_positions; A and B must be runs of the source,
    [CLS]/[SEP] in their places, padding zero. Returns how many instances were checked."""
    n = len(features["input_ids"]) if limit is None else limit
    for i in range(n):
        ids = features["input_ids"][i].copy()
        count = int(features["masked_lm_weights"][i].sum())
        positions = features["masked_lm_positions"][i, :count]
        ids[positions] = features["masked_lm_ids"][i, :count]
        length = int(features["input_mask"][i].sum())
        segments = features["segment_ids"][i]
        split = int((segments[:length] == 0).sum())
        # Predictions only on tokens of A and B: never [CLS], a [SEP] or padding.
        assert ((positions > 0) & (positions < length) & (positions != split - 1)
                & (positions != length - 1)).all(), i
        assert ids[0] == 101 and ids[split - 1] == 102 and ids[length - 1] == 102, i
        assert not ids[length:].any() and not segments[length:].any()
        assert (segments[:split] == 0).all() and (segments[split:length] == 1).all()
        assert source.holds(ids[1:split - 1]), f"instance {i}: segment A is not in the text"
        assert source.holds(ids[split:length - 1]), f"instance {i}: segment B is not in the text"
    return n


def test_masked_ids_are_the_replaced_tokens(made, corpus, vocab):
    source = _Source(corpus[1], vocab)
    ours = _read(made["ours"])
    assert _check_restored(ours, source) == made["stats"].instances
    # The same check passes on the original's records, and fails on a wrong label.
    theirs = _read([made["theirs"]])
    _check_restored(theirs, source, limit=300)
    broken = {k: v.copy() for k, v in ours.items()}
    broken["masked_lm_ids"][7, 0] = (broken["masked_lm_ids"][7, 0] + 1) % 30522
    with pytest.raises(AssertionError, match="instance 7"):
        _check_restored(broken, source, limit=8)


def test_whole_word_masking_masks_whole_words(corpus, vocab, tmp_path):
    documents = corpus[1][:40]
    encoder = ChunkEncoder(vocab, options=PretrainingDataOptions(
        max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, dupe_factor=2,
        do_whole_word_mask=True))
    features = encoder.features(documents, chunk_index=0)
    tokens = np.array(encoder.tokenizer.get_vocabulary())
    piece = np.char.startswith(tokens, "##")
    rows = 0
    for i in range(len(features["input_ids"])):
        count = int(features["masked_lm_weights"][i].sum())
        chosen = np.zeros(SEQ, bool)
        chosen[features["masked_lm_positions"][i, :count]] = True
        ids = features["input_ids"][i].copy()
        ids[chosen] = features["masked_lm_ids"][i, :count]
        # A ## piece is chosen exactly when the token before it (same word) is.
        for p in range(2, int(features["input_mask"][i].sum())):
            if piece[ids[p]] and ids[p - 1] not in (101, 102):
                assert chosen[p] == chosen[p - 1], (i, p)
                rows += 1
    assert rows > 100  # the corpus has words of several pieces
    source = _Source(documents, vocab)
    assert _check_restored(features, source) == len(features["input_ids"])


def test_same_seed_same_records_and_shards_partition(small_corpus, vocab, tmp_path):
    options = PretrainingDataOptions(**dict(FLAGS, dupe_factor=1))
    one = [str(tmp_path / "one.tfrecord")]
    again = [str(tmp_path / "again.tfrecord")]
    three = [str(tmp_path / f"three-{i}") for i in range(3)]
    for outputs in (one, again, three):
        pretraining_data.create_pretraining_data(small_corpus[0], outputs, vocab, options=options,
                                                 chunk_lines=400)
    records = [r.numpy() for r in tf.data.TFRecordDataset(one)]
    assert records == [r.numpy() for r in tf.data.TFRecordDataset(again)]
    shards = [[r.numpy() for r in tf.data.TFRecordDataset(p)] for p in three]
    assert sum(map(len, shards)) == len(records)
    assert [shards[i % 3][i // 3] for i in range(len(records))] == records  # round robin
    other = [str(tmp_path / "other.tfrecord")]
    pretraining_data.create_pretraining_data(
        small_corpus[0], other, vocab, options=PretrainingDataOptions(**dict(
            FLAGS, dupe_factor=1, random_seed=7)), chunk_lines=400)
    assert [r.numpy() for r in tf.data.TFRecordDataset(other)] != records


def test_workers_make_the_same_records(small_corpus, vocab, tmp_path):
    options = PretrainingDataOptions(**dict(FLAGS, dupe_factor=1))
    alone, workers = str(tmp_path / "alone.tfrecord"), str(tmp_path / "workers.tfrecord")
    stats = [pretraining_data.create_pretraining_data(
        small_corpus[0], [path], vocab, options=options, num_workers=count, chunk_lines=200)
        for path, count in ((alone, 1), (workers, 2))]
    assert stats[0].worker_processes == 0 and stats[1].worker_processes == 2
    assert stats[1].chunks > 4
    with open(alone, "rb") as a, open(workers, "rb") as b:
        assert a.read() == b.read()


def test_memory_held_does_not_grow_with_the_corpus(small_corpus, vocab, tmp_path):
    """Lines held at once (read, not yet written) for 1 and 6 copies of the corpus: bounded
    by the chunk size, not the input."""
    copies = []
    for i in range(6):
        path = tmp_path / f"copy-{i}.txt"
        path.write_bytes(open(small_corpus[0], "rb").read())
        copies.append(str(path))
    options = PretrainingDataOptions(**dict(FLAGS, dupe_factor=1))
    held = []
    for inputs in (copies[:1], copies):
        stats = pretraining_data.create_pretraining_data(
            inputs, [str(tmp_path / "out.tfrecord")], vocab, options=options,
            chunk_lines=300)
        held.append(stats.max_lines_held)
        assert stats.lines == sum(map(len, small_corpus[1])) * len(inputs)
    # Three chunks (one being made, one tokenized ahead, one waiting to be) and a small last
    # one, each chunk up to a document longer than chunk_lines.
    bound = 3 * (300 + max(len(d) for d in small_corpus[1])) + 300 // 2
    assert held[0] <= bound and held[1] <= bound, held  # of 1,500 and 9,000 lines read


# ---- errors: clear, early, naming the culprit; nothing written ------------------------------

def _make(inputs, tmp_path, vocab, outputs=None, **kwargs):
    outputs = outputs or [str(tmp_path / "out.tfrecord")]
    return pretraining_data.create_pretraining_data(inputs, outputs, vocab, **kwargs)


@pytest.mark.parametrize("changes, message", [
    (dict(max_predictions_per_seq=62), "--max_predictions_per_seq=62 is more than a sequence "
     "of --max_seq_length=64 can hold"),
    (dict(max_seq_length=4), "--max_seq_length must be an integer >= 5"),
    (dict(masked_lm_prob=0.0), r"--masked_lm_prob must be a probability in \(0, 1\]"),
    (dict(masked_lm_prob=1.5), r"--masked_lm_prob must be a probability"),
    (dict(short_seq_prob=-0.1), r"--short_seq_prob must be a probability in \[0, 1\]"),
    (dict(dupe_factor=0), "--dupe_factor must be an integer >= 1"),
    (dict(max_predictions_per_seq=2.5), "--max_predictions_per_seq must be an integer"),
])
def test_bad_options(corpus, vocab, tmp_path, changes, message):
    with pytest.raises(PretrainingDataError, match=message):
        _make(corpus[0], tmp_path, vocab, options=PretrainingDataOptions(**dict(FLAGS, **changes)))
    assert os.listdir(tmp_path) == []


def test_bad_vocabulary(corpus, tmp_path):
    bad = tmp_path / "vocab.txt"
    bad.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n")
    with pytest.raises(PretrainingDataError, match=r"bad vocabulary.*\[MASK\]"):
        _make(corpus[0], tmp_path, str(bad))
    with pytest.raises(PretrainingDataError, match="bad vocabulary.*not found.*nothere.txt"):
        _make(corpus[0], tmp_path, str(tmp_path / "nothere.txt"))


def test_bad_inputs_are_named(vocab, tmp_path):
    with pytest.raises(PretrainingDataError, match=f"{tmp_path}/missing.txt: no such file"):
        _make(str(tmp_path / "missing.txt"), tmp_path, vocab)
    (tmp_path / "empty.txt").write_bytes(b"")
    with pytest.raises(PretrainingDataError, match=f"input file {tmp_path}/empty.txt is empty"):
        _make(str(tmp_path / "empty.txt"), tmp_path, vocab)
    (tmp_path / "unknown.txt").write_text("\u2603 \u2604\n")  # no token of the vocabulary? [UNK]
    (tmp_path / "controls.txt").write_text("\x01\x02\n\x03\n")  # nothing the tokenizer keeps
    with pytest.raises(PretrainingDataError, match="no instances.*controls.txt"):
        _make(str(tmp_path / "controls.txt"), tmp_path, vocab)
    assert sorted(os.listdir(tmp_path)) == ["controls.txt", "empty.txt", "unknown.txt"]


@pytest.mark.parametrize("output, message", [
    ("no/such/dir/out.tfrecord", "the directory .*no/such/dir does not exist"),
    ("/proc/out.tfrecord", "cannot write in /proc"),
    ("{corpus}", "is also an input file"),
    ("{tmp}", "is a directory"),
])
def test_bad_outputs(corpus, vocab, tmp_path, output, message):
    output = output.format(corpus=corpus[0], tmp=tmp_path)
    if output.startswith("no/"):
        output = str(tmp_path / output)
    with pytest.raises(PretrainingDataError, match=message):
        _make(corpus[0], tmp_path, vocab, outputs=[output])
    assert os.listdir(tmp_path) == []


def test_output_names():
    assert pretraining_data.output_paths("o", 3) == [
        "o-00000-of-00003", "o-00001-of-00003", "o-00002-of-00003"]
    with pytest.raises(PretrainingDataError, match="takes one --output_file name"):
        pretraining_data.output_paths("a,b", 2)
    with pytest.raises(PretrainingDataError, match="--num_output_shards must be"):
        pretraining_data.output_paths("a", 0)
    with pytest.raises(PretrainingDataError, match="named twice"):
        pretraining_data.check_outputs(["a", "a"])


def test_failures_midway_leave_no_output(small_corpus, vocab, tmp_path):
    """An error after records were written (a later file holds no text; Ctrl-C; a dead
    worker) leaves no output file and no temporary directory behind."""
    (tmp_path / "blank.txt").write_text("\n \n")
    outputs = [str(tmp_path / "out.tfrecord")]
    with pytest.raises(PretrainingDataError, match=f"{tmp_path}/blank.txt holds no text"):
        pretraining_data.create_pretraining_data(
            [small_corpus[0], str(tmp_path / "blank.txt")], outputs, vocab, chunk_lines=500,
            options=PretrainingDataOptions(**dict(FLAGS, dupe_factor=1)))

    def interrupt(stats):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pretraining_data.create_pretraining_data(
            small_corpus[0], outputs, vocab, chunk_lines=500, progress=interrupt,
            options=PretrainingDataOptions(**dict(FLAGS, dupe_factor=1)))
    assert sorted(os.listdir(tmp_path)) == ["blank.txt"]


_ENCODE = pretraining_data._encode


def _encode_or_die(chunk, chunk_index):
    """A worker's job that kills its own process (SIGKILL, as the OOM killer does) on the
    third chunk, before it sends anything back."""
    if chunk_index == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return _ENCODE(chunk, chunk_index)


def test_a_dead_worker_is_an_error(small_corpus, vocab, tmp_path, monkeypatch):
    """A worker killed while it works: the run stops with an error naming it, and leaves no
    output. (The worker dies before it sends its result: one killed while writing it to the
    result pipe leaves Python's ProcessPoolExecutor waiting for the rest of the message,
    which no error can end.)"""
    # The pool is forked after the patch, so its workers run _encode_or_die.
    monkeypatch.setattr(pretraining_data, "_encode", _encode_or_die)
    with pytest.raises(PretrainingDataError, match="a worker process died"):
        pretraining_data.create_pretraining_data(
            small_corpus[0], [str(tmp_path / "out.tfrecord")], vocab, num_workers=2,
            chunk_lines=50, options=PretrainingDataOptions(**dict(FLAGS, dupe_factor=1)))
    assert os.listdir(tmp_path) == []


def test_inputs_and_outputs_on_ram_and_nothing_on_local_disk(small_corpus, vocab, tmp_path,
                                                              monkeypatch):
    """ram:// stands for gs://: the same tf.io.gfile code. Corpus, vocabulary and records on
    it; the records are those a local run makes."""
    from keras_bert import storage
    from tests.local_disk import nothing_written_locally

    root = "ram://test_create/run"
    storage.rmtree(root)
    options = PretrainingDataOptions(**dict(FLAGS, dupe_factor=1))
    local = [str(tmp_path / "local.tfrecord")]
    pretraining_data.create_pretraining_data(small_corpus[0], local, vocab, options=options,
                                             chunk_lines=400)
    corpus = storage.copy(small_corpus[0], f"{root}/in/wiki.txt")
    ram_vocab = storage.copy(vocab, f"{root}/in/vocab.txt")
    outputs = pretraining_data.output_paths(f"{root}/out/wiki.tfrecord", 2)
    with nothing_written_locally(tmp_path, monkeypatch):
        stats = pretraining_data.create_pretraining_data(corpus, outputs, ram_vocab,
                                                         options=options, chunk_lines=400)
        assert storage.listdir(f"{root}/out") == [
            "wiki.tfrecord-00000-of-00002", "wiki.tfrecord-00001-of-00002"]
        shards = [[r.numpy() for r in tf.data.TFRecordDataset(p)] for p in outputs]
    records = [r.numpy() for r in tf.data.TFRecordDataset(local)]
    assert stats.instances == len(records) == sum(map(len, shards))
    assert [shards[i % 2][i // 2] for i in range(len(records))] == records
    storage.rmtree(root)
