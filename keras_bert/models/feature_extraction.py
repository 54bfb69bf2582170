"""`extract_features`: per-token outputs of chosen encoder layers, as Google's
``extract_features.py`` writes them (one JSON object per input line)."""

import numpy as np


def extract_features(encoder, preprocessor, texts, texts_b=None, layers=None, batch_size=32):
    """Yields, for each input, Google's ``extract_features.py`` record::

        {"linex_index": i, "features": [{"token": "[CLS]", "layers": [
            {"index": -1, "values": [...]}, ...]}, ...]}

    one entry per real token (``[CLS]``, the WordPieces, ``[SEP]``; no padding), values
    rounded to 6 decimals as there.

    Args:
        encoder: a `BertEncoder`.
        preprocessor: a `BertPreprocessor` with the encoder's vocabulary.
        texts: first segments (strings); ``texts_b``: optional second segments (None or ""
            for an input without one).
        layers: indices into the encoder's blocks (-1 is the last), as ``--layers`` there;
            default: the last four (-1, -2, -3, -4), or all of a smaller encoder.
        batch_size: inputs per forward pass.

    Example:

    >>> from keras_bert import BertEncoder, BertPreprocessor
    >>> encoder = BertEncoder.from_preset("tiny_random")
    >>> preprocessor = BertPreprocessor.from_preset("tiny_random", seq_length=8)
    >>> record = next(extract_features(encoder, preprocessor, ["the cat sat"], layers=[-1]))
    >>> [f["token"] for f in record["features"]]
    ['[CLS]', 'the', 'cat', 'sat', '[SEP]']
    >>> first = record["features"][0]["layers"]
    >>> [layer["index"] for layer in first], len(first[0]["values"])
    ([-1], 16)
    """
    num_layers = encoder.bert_config.num_hidden_layers
    if layers is None:
        layers = [-i for i in range(1, min(4, num_layers) + 1)]
    layers = [int(i) for i in layers]
    bad = [i for i in layers if not -num_layers <= i < num_layers]
    if bad or not layers:
        raise ValueError(f"layers must be indices into the encoder's {num_layers} blocks "
                         f"(-{num_layers}..{num_layers - 1}); got {list(layers)}.")
    texts = list(texts)
    if texts_b is not None:
        texts_b = list(texts_b)
        if len(texts_b) != len(texts):
            raise ValueError(f"texts has {len(texts)} entries but texts_b {len(texts_b)}.")
    vocabulary = preprocessor.tokenizer.vocabulary
    for start in range(0, len(texts), batch_size):
        a = texts[start:start + batch_size]
        b = None if texts_b is None else texts_b[start:start + batch_size]
        if b is not None and any(b):
            # Inputs without a second segment in a batch of pairs: packed alone.
            packed = _pack_mixed(preprocessor, a, b)
        else:
            packed = {k: v.numpy() for k, v in preprocessor(a).items()}
        outputs = encoder(packed)["encoder_outputs"]
        values = [np.asarray(outputs[i], np.float32) for i in layers]
        ids, mask = packed["input_word_ids"], packed["input_mask"]
        for row in range(len(a)):
            features = []
            for position in np.flatnonzero(mask[row]):
                features.append({
                    "token": vocabulary[int(ids[row, position])],
                    "layers": [{"index": index,
                                "values": [round(float(x), 6) for x in value[row, position]]}
                               for index, value in zip(layers, values)],
                })
            yield {"linex_index": start + row, "features": features}


def _pack_mixed(preprocessor, a, b):
    rows = {}
    for i, (x, y) in enumerate(zip(a, b)):
        out = preprocessor(([x], [y])) if y else preprocessor([x])
        rows[i] = {k: v.numpy()[0] for k, v in out.items()}
    return {k: np.stack([rows[i][k] for i in range(len(a))]) for k in rows[0]}
