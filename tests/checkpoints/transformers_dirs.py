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
                           train_on=None, train_steps=5, **config):
    """Writes ``transformers.<architecture>`` (random weights from ``seed``, `SIZES` updated
    by ``config``: ``num_labels``, ``id2label``, ``problem_type``, ...) and a
    ``BertTokenizer`` on the real uncased vocabulary into ``directory`` with their
    ``save_pretrained``; with ``train_on`` (a batch of the tokenizer's, numpy), the model is
    first trained briefly on it (`train_briefly`, ``train_steps`` steps). Returns ``(directory, model, tokenizer)``,
    the model in eval mode."""
    import torch
    import transformers

    directory = pathlib.Path(directory)
    torch.manual_seed(seed)
    model = getattr(transformers, architecture)(transformers.BertConfig(**{**SIZES, **config}))
    if train_on is not None:
        train_briefly(model, train_on, steps=train_steps, seed=seed)
    model.eval()
    model.save_pretrained(str(directory))
    tokenizer = transformers.BertTokenizer(str(minilm_dir() / "vocab.txt"),
                                           do_lower_case=do_lower_case)
    tokenizer.save_pretrained(str(directory))
    return directory, model, tokenizer


def random_labels(model, batch, seed=0):
    """Labels of the right kind for a ``BertFor*`` model and a tokenizer's ``batch`` (numpy,
    ``input_ids`` [batch, seq], or [batch, choices, seq] for multiple choice), drawn from
    ``seed``: what transformers' own loss takes (``labels``; ``start_positions`` and
    ``end_positions`` for question answering)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    ids = batch["input_ids"]
    n, config = ids.shape[0], model.config
    kind = type(model).__name__
    if kind == "BertForQuestionAnswering":
        return {"start_positions": torch.randint(0, ids.shape[1], (n,), generator=generator),
                "end_positions": torch.randint(0, ids.shape[1], (n,), generator=generator)}
    if kind == "BertForMultipleChoice":
        return {"labels": torch.randint(0, ids.shape[1], (n,), generator=generator)}
    if kind == "BertForTokenClassification":
        return {"labels": torch.randint(0, config.num_labels, ids.shape, generator=generator)}
    if kind == "BertForMaskedLM":
        return {"labels": torch.randint(0, config.vocab_size, ids.shape, generator=generator)}
    if config.problem_type == "multi_label_classification":
        return {"labels": torch.randint(0, 2, (n, config.num_labels),
                                        generator=generator).float()}
    if config.num_labels == 1:
        return {"labels": torch.randn(n, generator=generator)}
    return {"labels": torch.randint(0, config.num_labels, (n,), generator=generator)}


def train_briefly(model, batch, steps=5, learning_rate=1e-2, seed=0):
    """A few Adam steps of the model's own loss on ``batch`` with `random_labels`: every
    weight moves from its initialisation (the head's normal(0, 0.02)), as in a short
    fine-tuning, so that its outputs differ clearly from text to text."""
    import torch

    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    inputs = {k: torch.from_numpy(v).long() for k, v in batch.items()}
    labels = random_labels(model, batch, seed)
    for _ in range(steps):
        optimizer.zero_grad()
        model(**inputs, **labels).loss.backward()
        optimizer.step()
    model.eval()
    return model


def logits(model, batch):
    """The outputs of a transformers ``BertFor*`` model in eval mode for a tokenizer's numpy
    ``batch``: its ``logits`` as numpy, or ``(start_logits, end_logits)``."""
    import torch

    with torch.no_grad():
        out = model(**{k: torch.from_numpy(v).long() for k, v in batch.items()})
    if hasattr(out, "start_logits"):
        return out.start_logits.numpy(), out.end_logits.numpy()
    return out.logits.numpy()


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
