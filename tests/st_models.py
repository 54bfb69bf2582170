"""Tiny sentence-transformers models, written by sentence-transformers itself, for the embedder
tests: a random 2-layer Hugging Face BERT on the tiny vocabulary (tests/models/tiny.py) with
the modules asked for, saved with ``SentenceTransformer.save``.

    write_st_model(tmp_path / "st", pooling=("cls", "mean"), dense=[(8, "Tanh")])
"""

import pathlib
import shutil

from tests.dependencies import require
from tests.models.tiny import VOCAB

HIDDEN = 16
TEXTS = ["a great movie", "the actor was very good", "a dull and boring film",
         "what a fun plot", "the cat sat", "a red dog ran in paris", "not good"]


def write_st_model(directory, pooling="mean", dense=(), normalize=True, prompts=None,
                   max_seq_length=32, seed=0, extra_modules=(), default_prompt_name=None):
    """Writes a sentence-transformers model into ``directory`` and returns its path.

    ``pooling``: sentence-transformers' mode names (a str or a tuple); ``dense``: ``(units,
    torch activation class name)`` per Dense module; ``extra_modules``: functions of the width
    giving more modules, put before Normalize (e.g. ``LayerNorm``); ``prompts``: the model's prompts. The BERT's
    weights are drawn with initializer_range 0.2, so that its vectors depend on the text.
    """
    torch = require("torch")
    transformers = require("transformers")
    require("sentence_transformers")
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import (Dense, Normalize, Pooling,
                                                                    Transformer)

    directory = pathlib.Path(directory)
    bert = directory.parent / f"{directory.name}-bert"
    config = transformers.BertConfig(
        vocab_size=len(VOCAB), hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64, initializer_range=0.2)
    torch.manual_seed(seed)
    transformers.BertModel(config).save_pretrained(str(bert))
    (bert / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    transformers.BertTokenizer(str(bert / "vocab.txt"), do_lower_case=True).save_pretrained(
        str(bert))
    modules = [Transformer(str(bert), max_seq_length=max_seq_length),
               Pooling(HIDDEN, pooling_mode=pooling)]
    width = HIDDEN * (1 if isinstance(pooling, str) else len(pooling))
    for units, activation in dense:
        modules.append(Dense(width, units, activation_function=getattr(torch.nn, activation)()))
        width = units
    modules += [make(width) for make in extra_modules]
    if normalize:
        modules.append(Normalize())
    model = SentenceTransformer(modules=modules, device="cpu", prompts=prompts,
                                default_prompt_name=default_prompt_name)
    model.save(str(directory))
    # transformers 5 saves tokenizer.json alone; BERT repositories carry vocab.txt too.
    shutil.copy(bert / "vocab.txt", directory / "vocab.txt")
    shutil.rmtree(bert)
    return directory


def st_encode(directory, texts, **kwargs):
    """sentence-transformers' embeddings of ``texts`` by the model in ``directory``."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(directory), device="cpu").encode(texts, **kwargs)
