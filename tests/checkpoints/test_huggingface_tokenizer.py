"""The tokenizer files of Hugging Face directories (keras_bert/checkpoints/huggingface_tokenizer.py):
tokenizer.json alone is a vocabulary, as transformers 5 saves BERT tokenizers; the casing comes
from it and tokenizer_config.json; what keras_bert's tokenizer cannot reproduce is refused."""

import json
import shutil

import pytest

from keras_bert import BertEncoder, BertTokenizer
from keras_bert.checkpoints import CheckpointError, open_directory
from tests.dependencies import require

from tests.checkpoints.test_huggingface import SENTENCES


def _transformers_dir(tmp_path, architecture="BertModel", **kwargs):
    require("torch")
    require("transformers")
    from tests.checkpoints.transformers_dirs import write_transformers_dir

    return write_transformers_dir(tmp_path / architecture, architecture, **kwargs)


def test_the_real_minilm_tokenizer_json_is_its_vocab_txt(minilm_path, tmp_path):
    """all-MiniLM-L6-v2 as transformers 5 would save it: without vocab.txt, its tokenizer.json
    gives the same vocabulary, casing and ids."""
    copy = tmp_path / "minilm"
    copy.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(minilm_path / name, copy / name)
    with_vocab = open_directory(minilm_path)
    without = open_directory(copy, require_weights=False)
    assert without.vocab_path is None and without.vocabulary == with_vocab.vocabulary
    assert without.do_lower_case is with_vocab.do_lower_case is True
    want, got = BertTokenizer.from_preset(str(minilm_path)), BertTokenizer.from_preset(str(copy))
    for text in SENTENCES:
        assert got(text).numpy().tolist() == want(text).numpy().tolist(), text


def test_a_tokenizer_json_alone_is_the_vocabulary(tmp_path):
    """transformers 5 saves a BERT tokenizer as tokenizer.json + tokenizer_config.json: the
    WordPiece vocabulary and the casing are read from them, and tokenize as transformers."""
    directory, _, tokenizer = _transformers_dir(tmp_path)
    assert sorted(p.name for p in directory.iterdir()) == [
        "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    preset = open_directory(directory)
    assert preset.vocab_path is None and preset.vocab_file == str(directory / "tokenizer.json")
    assert preset.vocabulary == _minilm_vocab() and len(preset.vocabulary) == 30522
    assert preset.do_lower_case is True
    ours = BertTokenizer.from_preset(str(directory))
    assert ours.do_lower_case is True
    for text in SENTENCES + ["Héllo, Wörld! Naïve café."]:
        want = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert ours(text).numpy().tolist() == want, text
    encoder = BertEncoder.from_preset(str(directory))
    assert encoder.vocabulary == _minilm_vocab() and encoder.do_lower_case is True
    saved = encoder.save_to_preset(str(tmp_path / "saved"))  # written as vocab.txt
    assert (tmp_path / "saved" / "vocab.txt").read_text().splitlines() == _minilm_vocab()
    assert open_directory(saved).do_lower_case is True


def _minilm_vocab():
    from tests.conftest import minilm_dir

    return (minilm_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()


def test_a_cased_tokenizer_json_gives_a_cased_preset(tmp_path):
    directory, _, tokenizer = _transformers_dir(tmp_path, do_lower_case=False)
    assert open_directory(directory).do_lower_case is False
    text = "Paris is the capital of France."
    assert BertTokenizer.from_preset(str(directory))(text).numpy().tolist() == \
        tokenizer(text, add_special_tokens=False)["input_ids"]


def _edit(path, change):
    values = json.loads(path.read_text())
    change(values)
    path.write_text(json.dumps(values))


def test_tokenizer_files_that_disagree_are_refused(tmp_path):
    directory, _, _ = _transformers_dir(tmp_path)
    _edit(directory / "tokenizer_config.json", lambda v: v.__setitem__("do_lower_case", False))
    with pytest.raises(CheckpointError, match=(
            r"contradictory casing: .*tokenizer_config\.json \(do_lower_case\) says "
            r"do_lower_case=False \(cased\) but .*tokenizer\.json \(BertNormalizer\) "
            r"\(lowercase\) says do_lower_case=True")):
        open_directory(directory)
    assert open_directory(directory, do_lower_case=True).do_lower_case is True


def test_accents_kept_while_lower_casing_are_refused(tmp_path):
    directory, _, _ = _transformers_dir(tmp_path)
    _edit(directory / "tokenizer.json", lambda v: v["normalizer"].__setitem__(
        "strip_accents", False))
    with pytest.raises(CheckpointError, match=r"tokenizer\.json: strip_accents=False with "
                       r"lower-casing True: keras_bert's BertTokenizer strips accents exactly "
                       r"when it lower-cases"):
        open_directory(directory)
    assert open_directory(directory, do_lower_case=True).do_lower_case is True


@pytest.mark.parametrize("change, message", [
    (lambda v: v["model"].__setitem__("type", "BPE"),
     r"tokenizer\.json: a BPE tokenizer, not WordPiece; keras_bert's BertTokenizer reads BERT's "
     r"WordPiece vocabularies only"),
    (lambda v: v["model"].__setitem__("continuing_subword_prefix", "@@"),
     r"tokenizer\.json: its WordPiece model continues words with '@@'"),
    (lambda v: v["model"]["vocab"].pop("the"), r"the WordPiece ids are not 0\.\.30520 \(no "
                                                r"token has id 1996\)"),
])
def test_a_tokenizer_json_that_is_no_bert_wordpiece_is_refused(tmp_path, change, message):
    directory, _, _ = _transformers_dir(tmp_path)
    _edit(directory / "tokenizer.json", change)
    with pytest.raises(CheckpointError, match=message):
        BertEncoder.from_preset(str(directory))


def test_a_vocab_txt_that_is_not_the_tokenizer_json_vocabulary_is_refused(tmp_path):
    directory, _, _ = _transformers_dir(tmp_path)
    vocab = _minilm_vocab()
    vocab[1996], vocab[1997] = vocab[1997], vocab[1996]
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    with pytest.raises(CheckpointError, match=r"vocab\.txt and tokenizer\.json hold different "
                       r"vocabularies"):
        open_directory(directory)
    (directory / "vocab.txt").write_text("\n".join(_minilm_vocab()) + "\n", encoding="utf-8")
    assert open_directory(directory).vocab_path == str(directory / "vocab.txt")


def test_the_tokenizer_files_written_are_those_transformers_writes(tmp_path):
    """`write_tokenizer` writes the tokenizer.json transformers 5 saves for a BertTokenizer on
    the same vocabulary (cased and uncased), and its tokenizer_config.json's casing."""
    import json

    from keras_bert.checkpoints import huggingface_tokenizer
    from tests.conftest import minilm_dir

    for lower in (True, False):
        directory, _, _ = _transformers_dir(tmp_path / str(lower), do_lower_case=lower)
        ours = tmp_path / f"ours-{lower}"
        ours.mkdir()
        huggingface_tokenizer.write_tokenizer(str(ours), str(minilm_dir() / "vocab.txt"),
                                              lower, 512)
        theirs = json.loads((directory / "tokenizer.json").read_text())
        assert json.loads((ours / "tokenizer.json").read_text()) == theirs
        config = json.loads((ours / "tokenizer_config.json").read_text())
        assert config["do_lower_case"] is lower and config["tokenizer_class"] == "BertTokenizer"
        assert (ours / "vocab.txt").read_text() == (minilm_dir() / "vocab.txt").read_text()
