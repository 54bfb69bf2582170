"""Learning a WordPiece vocabulary from text with tensorflow-text's vocabulary tools."""

import tensorflow as tf

from keras_bert import checks
from keras_bert.text import normalization
from keras_bert import vocab as vocab_lib


def learn_vocabulary(
    texts,
    vocab_size,
    do_lower_case=True,
    reserved_tokens=vocab_lib.SPECIAL_TOKENS,
    batch_size=1024,
    **learn_params,
):
    """Learns a BERT WordPiece vocabulary (list of tokens; the reserved ones first).

    It is `tensorflow_text.tools.wordpiece_vocab`'s `bert_vocab_from_dataset`, with one change:
    words are split by keras_bert's exact BERT basic tokenization rather than
    tensorflow-text's (whose NFKC case folding splits some words differently), so the
    vocabulary fits the words `BertTokenizer` will look up.

    Args:
      texts: a `tf.data.Dataset` of string scalars, or an iterable of str.
      vocab_size: the largest vocabulary size (the learner stops within `slack_ratio`).
      do_lower_case: learn an uncased (lower-cased, accents stripped) or a cased vocabulary.
      reserved_tokens: tokens put first, in this order (BERT: [PAD] [UNK] [CLS] [SEP] [MASK]).
      batch_size: lines per batch of basic tokenization.
      **learn_params: passed to `wordpiece_tokenizer_learner_lib.learn` (e.g. `lower_thresh`,
        `max_unique_chars`).

    Raises:
      ValueError: `vocab_size` not an int >= the number of reserved tokens, `batch_size` not
        an int >= 1, `do_lower_case` not a bool, no words in `texts`.

    Example:

    >>> vocab = learn_vocabulary(["the cat sat", "the cats sat on the mat"] * 20,
    ...                          vocab_size=40, lower_thresh=1)
    >>> vocab[:5], "the" in vocab, "##s" in vocab
    (['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'], True, True)
    """
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    reserved_tokens = list(reserved_tokens)
    vocab_size = checks.integer("vocab_size", vocab_size, minimum=len(reserved_tokens))
    batch_size = checks.integer("batch_size", batch_size, minimum=1, maximum=2**20)
    do_lower_case = checks.boolean("do_lower_case", do_lower_case)
    normalization.patterns()  # build the character classes eagerly, not under autograph
    if not isinstance(texts, tf.data.Dataset):
        texts = tf.data.Dataset.from_tensor_slices(tf.constant(list(texts), tf.string))
    words = texts.batch(batch_size).map(
        lambda t: normalization.basic_tokenize(t, lower_case=do_lower_case).flat_values,
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    counts = learner.count_words(words.as_numpy_iterator())
    if not counts:
        raise ValueError("no words in the input texts")
    vocab = learner.learn(counts, vocab_size, reserved_tokens, **learn_params)
    # The learner can overshoot by a token or so; the tail holds its rarest character pieces.
    vocab = vocab[:vocab_size]
    vocab_lib.check_vocabulary(vocab, required=tuple(reserved_tokens))
    return vocab
