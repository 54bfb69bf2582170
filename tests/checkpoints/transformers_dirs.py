"""Directories written by transformers itself, as users' fine-tuned BERTs are: a `BertFor*`
class's ``save_pretrained`` (transformers 5: ``model.safetensors``, ``config.json``) and its
tokenizer's (``tokenizer.json`` and ``tokenizer_config.json``; transformers 5 writes no
``vocab.txt``), on small configs over the real uncased BERT vocabulary (all-MiniLM-L6-v2's,
30,522 tokens), so that real text tokenizes as it does for the released models."""

import pathlib

from tests.conftest import minilm_dir

# The sizes of the test models: small, so a directory is written in a fraction of a second.
SIZES = dict(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=64, max_position_embeddings=64)


def write_transformers_dir(directory, architecture="BertModel", seed=0, do_lower_case=True,
                           **config):
    """Writes ``transformers.<architecture>`` (random weights from ``seed``, `SIZES` updated
    by ``config``: ``num_labels``, ``id2label``, ...) and a ``BertTokenizer`` on the real
    uncased vocabulary into ``directory`` with their ``save_pretrained``. Returns
    ``(directory, model, tokenizer)``, the model in eval mode."""
    import torch
    import transformers

    directory = pathlib.Path(directory)
    torch.manual_seed(seed)
    model = getattr(transformers, architecture)(transformers.BertConfig(**{**SIZES, **config}))
    model.eval()
    model.save_pretrained(str(directory))
    tokenizer = transformers.BertTokenizer(str(minilm_dir() / "vocab.txt"),
                                           do_lower_case=do_lower_case)
    tokenizer.save_pretrained(str(directory))
    return directory, model, tokenizer


def hidden_states(model, batch):
    """The encoder's last hidden states of a transformers ``BertFor*`` (or ``BertModel``) for
    a tokenizer's numpy ``batch``."""
    import torch

    bert = getattr(model, "bert", model)
    with torch.no_grad():
        out = bert(input_ids=torch.from_numpy(batch["input_ids"]).long(),
                   attention_mask=torch.from_numpy(batch["attention_mask"]).long(),
                   token_type_ids=torch.from_numpy(batch["token_type_ids"]).long())
    return out.last_hidden_state.numpy()
