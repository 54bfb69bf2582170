"""model.export: the serving SavedModel of every task model gives the Keras model's outputs on
raw strings (serving_default) and on packed ids (serving_ids); its errors."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.export import ExportError, export_model, required_ops
from tests.models.tiny import NEGATIVE, POSITIVE, TEXT_DEPENDENT, VOCAB, tiny_encoder

# The ops of the tokenizer; both are in tensorflow-text 2.12.1 (what official TF Serving
# builds link), which lacks TFText>RoundRobinTrim and later ops.
TOKENIZER_OPS = {"FastWordpieceTokenizeWithOffsets", "NormalizeUTF8"}
TEXTS = POSITIVE[:3] + NEGATIVE[:3] + ["", "the cat sat on the red dog and the actor ran !"]


@pytest.fixture(scope="module")
def encoder():
    """One tiny encoder shared by the task models here (each test compares a model with its
    own export, so they need not be independent), to save building one per model."""
    keras.utils.set_random_seed(1)
    return tiny_encoder()


def _export(model, tmp_path, name="model", **options):
    path = model.export(str(tmp_path / name / "1"), **options)
    assert path == str(tmp_path / name / "1")
    assert set(required_ops(path)) == TOKENIZER_OPS
    loaded = tf.saved_model.load(path)
    assert sorted(loaded.signatures) == ["serving_default", "serving_ids"]
    return loaded.signatures["serving_default"], loaded.signatures["serving_ids"]


def _packed(model, x):
    return {k: tf.constant(v) for k, v in model.preprocessor(x).items()}


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_classifier_single_texts(encoder, tmp_path):
    model = keras_bert.BertClassifier(encoder, 3,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 16))
    serve, ids = _export(model, tmp_path, label_names=["neg", "neutral", "pos"])
    want = model.predict(TEXTS, verbose=0)
    out = serve(text=tf.constant(TEXTS))
    assert sorted(out) == ["label_ids", "labels", "logits", "probabilities"]
    np.testing.assert_allclose(out["logits"], want, atol=1e-5)
    np.testing.assert_allclose(out["probabilities"], _softmax(want), atol=1e-5)
    assert out["label_ids"].dtype == tf.int32
    np.testing.assert_array_equal(out["label_ids"], want.argmax(-1))
    assert [s.decode() for s in out["labels"].numpy()] == [
        ["neg", "neutral", "pos"][i] for i in want.argmax(-1)]
    from_ids = ids(**_packed(model, TEXTS))
    np.testing.assert_allclose(from_ids["logits"], want, atol=1e-5)


def test_classifier_pairs_and_regression(encoder, tmp_path):
    pre = keras_bert.BertPreprocessor(VOCAB, 12)
    model = keras_bert.BertClassifier(encoder, 2, preprocessor=pre)
    serve, _ = _export(model, tmp_path, "pairs", pairs=True)
    a, b = TEXTS, TEXTS[::-1]
    out = serve(text_a=tf.constant(a), text_b=tf.constant(b))
    np.testing.assert_allclose(out["logits"], model.predict((a, b), verbose=0), atol=1e-5)
    regression = keras_bert.BertClassifier(encoder, 1, preprocessor=pre)
    serve, ids = _export(regression, tmp_path, "sts")
    out = serve(text=tf.constant(TEXTS))
    assert sorted(out) == ["score"] and out["score"].shape == (len(TEXTS),)
    np.testing.assert_allclose(out["score"], regression.predict(TEXTS, verbose=0)[:, 0],
                               atol=1e-5)
    np.testing.assert_allclose(ids(**_packed(regression, TEXTS))["score"], out["score"],
                               atol=1e-6)


def test_multi_label_classifier_gives_each_class_a_probability(tmp_path):
    """Multi-label: each class's sigmoid, and the names of the classes above 0.5."""
    names = ["plot", "acting", "music"]
    model = keras_bert.BertClassifier(tiny_encoder(seed=0, **TEXT_DEPENDENT), 3,
                                      multi_label=True, label_names=names,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 16))
    serve, ids = _export(model, tmp_path)
    want = model.predict(TEXTS, verbose=0)
    out = serve(text=tf.constant(TEXTS))
    assert sorted(out) == ["labels", "logits", "probabilities"]
    np.testing.assert_allclose(out["logits"], want, atol=1e-5)
    np.testing.assert_allclose(out["probabilities"], 1 / (1 + np.exp(-want)), atol=1e-5)
    named = [[names[j] if want[i, j] > 0 else "" for j in range(3)] for i in range(len(TEXTS))]
    assert [[s.decode() for s in row] for row in out["labels"].numpy()] == named
    assert 0 < sum(map(bool, sum(named, []))) < want.size  # some classes named, not all
    assert sorted(ids(**_packed(model, TEXTS))) == ["labels", "logits", "probabilities"]


def test_token_classifier_labels_words(encoder, tmp_path):
    model = keras_bert.BertTokenClassifier(
        encoder, 3, preprocessor=keras_bert.BertTokenClassifierPreprocessor(VOCAB, 8))
    serve, ids = _export(model, tmp_path, label_names=["O", "LOC", "PER"])
    texts = ["paris is red", "the cat sat on the red dog and ran", "london"]
    out = serve(text=tf.constant(texts))
    want = model.predict(texts, verbose=0)
    np.testing.assert_allclose(out["logits"], want, atol=1e-5)
    np.testing.assert_array_equal(out["label_ids"], want.argmax(-1))
    words = [t.split() for t in texts]
    assert [[w.decode() for w in row if w] for row in out["words"].numpy()] == words
    tags = model.predict_words(texts)  # None: cut off by seq_length
    assert tags[1][-1] is None  # the long text loses words
    assert out["word_label_ids"].numpy().tolist() == [
        [-1 if t is None else t for t in row] + [-1] * (9 - len(row)) for row in tags]
    assert out["word_labels"].numpy().tolist() == [
        [b"" if t is None else ["O", "LOC", "PER"][t].encode() for t in row]
        + [b""] * (9 - len(row)) for row in tags]
    packed = {k: tf.constant(v) for k, v in model.preprocessor(tf.strings.split(texts)).items()}
    np.testing.assert_allclose(ids(**packed)["logits"], want, atol=1e-5)


def test_the_model_s_label_names_label_the_export_unless_overridden(encoder, tmp_path):
    tags = ["O", "LOC", "PER"]
    model = keras_bert.BertTokenClassifier(
        encoder, 3, label_names=tags,
        preprocessor=keras_bert.BertTokenClassifierPreprocessor(VOCAB, 8))
    serve, _ = _export(model, tmp_path)  # no label_names option: the model's
    out = serve(text=tf.constant(["paris is red", "london"]))
    assert out["word_labels"].numpy().tolist() == [
        [tags[i].encode() if i >= 0 else b"" for i in row]
        for row in out["word_label_ids"].numpy().tolist()]
    classifier = keras_bert.BertClassifier(
        encoder, 2, label_names=["neg", "pos"], preprocessor=keras_bert.BertPreprocessor(VOCAB, 8))
    serve, _ = _export(classifier, tmp_path, "renamed", label_names=["bad", "good"])
    out = serve(text=tf.constant(TEXTS))
    assert [s.decode() for s in out["labels"].numpy()] == [
        ["bad", "good"][i] for i in out["label_ids"].numpy()]


def _best_span(start, end, in_context, longest):
    best, span = -np.inf, (0, 0)
    for i in np.flatnonzero(in_context):
        for j in np.flatnonzero(in_context):
            if i <= j < i + longest and start[i] + end[j] > best:
                best, span = start[i] + end[j], (i, j)
    return span


def test_span_labeler_best_span_and_answer(encoder, tmp_path):
    model = keras_bert.BertSpanLabeler(
        encoder, preprocessor=keras_bert.BertPreprocessor(VOCAB, 16,
                                                                 truncator="waterfall"))
    serve, ids = _export(model, tmp_path, max_answer_length=3)
    questions = ["who sat", "what", "why is the film not good"]
    contexts = ["the cat sat on the red dog", "a red dog ran", "the plot is boring"]
    out = serve(question=tf.constant(questions), context=tf.constant(contexts))
    want = model.predict((questions, contexts), verbose=0)
    for name in ("start_logits", "end_logits"):
        np.testing.assert_allclose(out[name], want[name], atol=1e-5)
    packed = model.preprocessor((questions, contexts))
    word_ids = packed["input_word_ids"].numpy()
    for row in range(3):
        in_context = ((packed["input_type_ids"].numpy()[row] == 1)
                      & (packed["input_mask"].numpy()[row] == 1) & (word_ids[row] != 3))
        start, end = _best_span(want["start_logits"][row], want["end_logits"][row],
                                in_context, 3)
        assert (out["start_index"][row], out["end_index"][row]) == (start, end)
        assert 1 <= end - start + 1 <= 3
        answer = " ".join(VOCAB[i] for i in word_ids[row, start:end + 1]).replace(" ##", "")
        assert out["answer"].numpy()[row].decode() == answer
    from_ids = ids(**{k: tf.constant(v) for k, v in packed.items()})
    assert sorted(from_ids) == ["end_index", "end_logits", "start_index", "start_logits"]
    np.testing.assert_array_equal(from_ids["start_index"], out["start_index"])


def test_multiple_choice(encoder, tmp_path):
    model = keras_bert.BertMultipleChoice(
        encoder, 3, preprocessor=keras_bert.BertMultipleChoicePreprocessor(VOCAB, 10))
    serve, ids = _export(model, tmp_path)
    contexts = ["the cat", "a dog"]
    choices = [["sat", "ran", "is red"], ["ran", "sat", "was fun"]]
    out = serve(context=tf.constant(contexts), choices=tf.constant(choices))
    want = model.predict((contexts, choices), verbose=0)
    np.testing.assert_allclose(out["logits"], want, atol=1e-5)
    np.testing.assert_array_equal(out["label_ids"], want.argmax(-1))
    from_ids = ids(**{k: tf.constant(v) for k, v in
                      model.preprocessor((contexts, choices)).items()})
    np.testing.assert_allclose(from_ids["probabilities"], _softmax(want), atol=1e-5)


def test_masked_lm_predicts_at_the_masks(encoder, tmp_path):
    model = keras_bert.BertMaskedLM(
        encoder, preprocessor=keras_bert.BertMaskedLMPreprocessor(VOCAB, 12))
    serve, ids = _export(model, tmp_path, top_k=4)
    texts = ["the cat [MASK] on the [MASK].", "no mask here", "[MASK]",
             "a [MASK][MASK] movie and the plot is dull , boring and [MASK]"]
    out = serve(text=tf.constant(texts))
    # What the signature packs: the text around each [MASK] tokenized, the mask id there.
    tokenizer = model.preprocessor.tokenizer
    rows = []
    for text in texts:
        parts = [tokenizer.tokenize(p).numpy().tolist() for p in text.split("[MASK]")]
        row = sum((p + [tokenizer.mask_token_id] for p in parts[:-1]), []) + parts[-1]
        rows.append([2] + row[:10] + [3])
    positions = [[i for i, t in enumerate(r) if t == tokenizer.mask_token_id] for r in rows]
    assert positions == [[3, 6], [], [1], [2, 3]]  # the last mask of text 4 is cut off
    assert out["masked_lm_positions"].numpy().tolist() == [p + [0] * (2 - len(p))
                                                           for p in positions]
    assert out["masked_lm_weights"].numpy().tolist() == [[1.0] * len(p) + [0.0] * (2 - len(p))
                                                         for p in positions]
    word_ids = np.array([r + [0] * (12 - len(r)) for r in rows], "int32")
    x = {"input_word_ids": word_ids, "input_mask": (np.arange(12) < np.array(
        [[len(r)] for r in rows])).astype("int32"), "input_type_ids": np.zeros_like(word_ids),
        "masked_lm_positions": out["masked_lm_positions"].numpy()}
    probabilities = _softmax(model.predict(x, verbose=0))
    top = np.argsort(-probabilities, axis=-1)[..., :4]
    np.testing.assert_array_equal(out["top_ids"], top)
    np.testing.assert_allclose(out["top_probabilities"],
                               np.take_along_axis(probabilities, top, -1), atol=1e-5)
    assert out["top_tokens"].numpy()[0, 0].tolist() == [VOCAB[i].encode() for i in top[0, 0]]
    from_ids = ids(**{k: tf.constant(v) for k, v in x.items()})
    np.testing.assert_array_equal(from_ids["top_ids"], top)


def test_pretrainer_pairs_give_next_sentence_probabilities(encoder, tmp_path):
    model = keras_bert.BertPretrainer(
        encoder, preprocessor=keras_bert.BertPretrainerPreprocessor(VOCAB, 12))
    serve, _ = _export(model, tmp_path, pairs=True)
    out = serve(text_a=tf.constant(["the [MASK] sat"]), text_b=tf.constant(["a dog [MASK]"]))
    assert out["masked_lm_positions"].numpy().tolist() == [[2, 7]]
    packed = model.preprocessor.packer([model.preprocessor.tokenizer(["the cat sat"]),
                                        model.preprocessor.tokenizer(["a dog ran"])])
    x = {k: v.numpy() for k, v in packed.items()}
    x["input_word_ids"][0, [2, 7]] = model.preprocessor.tokenizer.mask_token_id
    x["masked_lm_positions"] = np.array([[2, 7]], "int32")
    want = model.predict(x, verbose=0)
    np.testing.assert_allclose(out["next_sentence_probabilities"],
                               _softmax(want["nsp_logits"]), atol=1e-5)


def test_text_embedder_serves_encode_s_vectors_with_its_default_prompt(tmp_path):
    """serving_default gives what ``encode`` gives (the default prompt before each text; it
    changes the vectors), serving_ids what ``predict`` gives on the ids, and the SavedModel
    is callable on strings, as TF Hub's text embedding models are."""
    preprocessor = keras_bert.BertTextEmbedderPreprocessor(VOCAB, 16)
    model = keras_bert.BertTextEmbedder(tiny_encoder(seed=2, **TEXT_DEPENDENT),
                                        preprocessor=preprocessor, prompts={"query": "what "},
                                        default_prompt_name="query")
    serve, ids = _export(model, tmp_path)
    out = serve(text=tf.constant(TEXTS))
    assert sorted(out) == ["embeddings"] and out["embeddings"].dtype == tf.float32
    want = model.encode(TEXTS)
    assert out["embeddings"].shape == (len(TEXTS), 16)
    np.testing.assert_allclose(out["embeddings"], want, atol=1e-5)
    unprompted = model.predict(TEXTS, verbose=0)
    assert np.abs(unprompted - want).max() > 1e-2  # the prompt counts
    np.testing.assert_allclose(ids(**_packed(model, TEXTS))["embeddings"], unprompted,
                               atol=1e-5)
    loaded = tf.saved_model.load(str(tmp_path / "model" / "1"))
    np.testing.assert_allclose(loaded(tf.constant(TEXTS)), want, atol=1e-5)


def test_errors(encoder, tmp_path):
    pre = keras_bert.BertPreprocessor(VOCAB, 12)
    model = keras_bert.BertClassifier(encoder, 2, preprocessor=pre)
    with pytest.raises(ExportError, match="numbered version directories"):
        model.export(str(tmp_path / "sentiment"))
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "saved_model.pb").write_bytes(b"")
    with pytest.raises(ExportError, match="already exists and is not empty"):
        model.export(str(tmp_path / "m" / "1"))
    with pytest.raises(ExportError, match="input_signature: the serving export's signatures "
                                          "are fixed"):
        model.export(str(tmp_path / "m" / "2"), input_signature=[tf.TensorSpec([None])])
    with pytest.raises(ExportError, match="label_names must be 2 strings"):
        model.export(str(tmp_path / "m" / "2"), label_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="top_k must be >= 1, got 0"):
        model.export(str(tmp_path / "m" / "2"), top_k=0)
    with pytest.raises(ValueError, match="pairs must be"):
        model.export(str(tmp_path / "m" / "2"), pairs="yes")
    with pytest.raises(ExportError, match="has no preprocessor"):
        keras_bert.BertClassifier(encoder, 2).export(str(tmp_path / "m" / "2"))
    span = keras_bert.BertSpanLabeler(encoder, preprocessor=pre)
    with pytest.raises(ExportError, match="pairs=True: BertSpanLabeler takes no sentence "
                                          "pairs in its serving signature .question, context"):
        span.export(str(tmp_path / "m" / "2"), pairs=True)
    with pytest.raises(ExportError, match="label_names: BertSpanLabeler has no class labels"):
        span.export(str(tmp_path / "m" / "2"), label_names=["x"])
    tagger = keras_bert.BertTokenClassifier(encoder, 2, preprocessor=pre)
    with pytest.raises(ExportError, match="BertTokenClassifier packs text with a "
                                          "BertTokenClassifierPreprocessor; this model's "
                                          "preprocessor is a BertPreprocessor"):
        tagger.export(str(tmp_path / "m" / "2"))
    with pytest.raises(ExportError, match=r"export_model takes a keras_bert task model "
                                          r"\(BertClassifier, .*\), got BertEncoder"):
        export_model(encoder, str(tmp_path / "m" / "2"))
    with pytest.raises(ValueError, match="format"):  # other formats are Keras' own
        model.export(str(tmp_path / "m" / "2"), format="no-such-format")
    for refused in ("onnx", "openvino"):  # documented by Keras; they fail there without
        with pytest.raises(ExportError, match=(  # tf2onnx/openvino and take no text
                f"format='{refused}': keras_bert's task models export as "
                "format='tf_saved_model' .* or format='litert'")):
            model.export(str(tmp_path / "m" / f"model.{refused}"), format=refused)
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["1"]


def test_serving_computes_only_up_to_the_longest_text_of_the_batch(encoder, tmp_path):
    """A classifier's signatures cut each batch to its longest sequence (rounded up to 8): ids
    past it are never read (an id outside the vocabulary there is harmless, where the encoder
    would refuse it), and the outputs are the full-length model's. A token classifier, whose
    outputs are per token, reads every position."""
    model = keras_bert.BertClassifier(encoder, 2,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 64))
    serve, ids = _export(model, tmp_path)
    texts = ["a great movie", "dull"]
    packed = _packed(model, texts)
    full = model(packed, training=False).numpy()  # every one of the 64 positions
    np.testing.assert_allclose(serve(text=tf.constant(texts))["logits"], full, atol=1e-5)
    longest = int(tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=-1)))
    cut = -(-longest // 8) * 8
    assert cut < 64
    word_ids = packed["input_word_ids"].numpy()
    word_ids[:, cut:] = len(VOCAB) + 1000
    poisoned = dict(packed, input_word_ids=tf.constant(word_ids))
    np.testing.assert_allclose(ids(**poisoned)["logits"], full, atol=1e-5)

    tagger = keras_bert.BertTokenClassifier(
        encoder, 2, preprocessor=keras_bert.BertTokenClassifierPreprocessor(VOCAB, 64))
    _, tagger_ids = _export(tagger, tmp_path, name="tagger")
    with pytest.raises(tf.errors.InvalidArgumentError, match="input_word_ids"):
        tagger_ids(**poisoned)


def _saved_shapes(path):
    """Shapes of the variables a SavedModel saved, and of the constants its functions hold."""
    from keras_bert.export.ops import _read

    reader = tf.train.load_checkpoint(os.path.join(path, "variables", "variables"))
    variables = [tuple(shape) for name, shape in reader.get_variable_to_shape_map().items()
                 if name.startswith("variables/")]
    constants = [tuple(d.size for d in node.attr["value"].tensor.tensor_shape.dim)
                 for graph in _read(path).meta_graphs
                 for function in graph.graph_def.library.function
                 for node in function.node_def if node.op == "Const"]
    return variables, constants


def test_the_export_is_a_lean_graph_its_large_weights_in_variables(tmp_path, monkeypatch):
    """The serving graph moves the attention heads without transposes and runs query, key
    and value as one matmul, on a kernel concatenated at export time. Weights of at most
    `serving_graph.SMALL_WEIGHT_BYTES` (biases, LayerNorms' factors, every kernel of a small
    model, the concatenated ones too) are constants of the graph; larger ones are
    variables, the concatenated kernel a variable of its own and the three kernels it was
    made of not saved. Both answer what the model predicts, on a model whose outputs depend
    on the text."""
    from keras_bert.export.ops import saved_ops
    from keras_bert.layers import serving_graph

    model = keras_bert.BertClassifier(tiny_encoder(seed=3, **TEXT_DEPENDENT), 3,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 16))
    want = model.predict(TEXTS, verbose=0)
    assert np.ptp(want, axis=0).min() > 0.01  # every logit moves with the text (1e-5 tests)
    small = _export(model, tmp_path, name="small")  # hidden 16: every kernel of few bytes
    monkeypatch.setattr(serving_graph, "SMALL_WEIGHT_BYTES", 0)
    large = _export(model, tmp_path, name="large")
    for serve, ids in (small, large):
        np.testing.assert_allclose(serve(text=tf.constant(TEXTS))["logits"], want, atol=1e-5)
        np.testing.assert_allclose(ids(**_packed(model, TEXTS))["logits"], want, atol=1e-5)
    for name in ("small", "large"):
        ops = saved_ops(str(tmp_path / name / "1"))
        assert "Transpose" not in ops and "Einsum" in ops, name
        assert "BatchMatMulV3" in ops, name  # small attention products, off oneDNN
    # Query, key and value in one matmul: a [hidden, 3 * hidden] kernel (hidden 16) in the
    # first layer; the last computes only [CLS]'s query (a [hidden, hidden] kernel) and
    # every row's key and value in one matmul ([hidden, 2 * hidden], the intermediate
    # kernels' shape too: intermediate size 32). The other [hidden, hidden] kernels: the two
    # attention outputs and the pooler.
    fused = [(16, 48), (16, 32), (16, 16)]
    variables, constants = _saved_shapes(str(tmp_path / "large" / "1"))
    assert [variables.count(s) for s in fused] == [1, 3, 4], variables
    assert (16, 48) not in constants and (16, 32) not in constants
    small_variables, constants = _saved_shapes(str(tmp_path / "small" / "1"))
    assert [constants.count(s) for s in fused] == [1, 3, 4], constants
    assert not set(fused) & set(small_variables)
    assert len(small_variables) < len(variables) < len(model.variables)


def test_calls_of_few_tokens_take_a_graph_traced_for_them(tmp_path, monkeypatch):
    """The traced serving call of an int8 model: one cond, on the call's tokens, between the
    model traced for at most `serving_graph.small_tokens` tokens (no cond inside) and the
    general graph; texts on either side of it answer what the model predicts. A float32
    model traces the general graph alone."""
    from keras_bert.export import task_adapters, task_export
    from keras_bert.layers import serving_graph

    # hidden 16: at most 12 tokens (isqrt(2304 // 16)) take the small side, where a text
    # alone is (2-13 tokens with [CLS] and [SEP]) and TEXTS together are not (8 x 13)
    monkeypatch.setattr(serving_graph, "SMALL_ATTENTION", 12 * 12 * 16)
    model = keras_bert.BertClassifier(tiny_encoder(seed=3, **TEXT_DEPENDENT), 3,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 16))
    specs = task_adapters.for_model(model).ids_specs()
    assert serving_graph.small_tokens(model) is None
    model.quantize("int8")
    assert serving_graph.small_tokens(model) == 12
    graph = task_export.traced_forward(model, specs)[0].graph
    functions = {f.signature.name: f for f in graph.as_graph_def().library.function}

    def conds(nodes):  # (not the model's input checks: tf.debugging's guards)
        return [node for node in nodes if node.op in ("If", "StatelessIf")
                and not node.name.endswith("AssertGuard")]

    def branches(node):
        return [functions[node.attr[b].func.name] for b in ("then_branch", "else_branch")]

    def inside(function):  # conds of a branch, at any depth
        return [c for node in conds(function.node_def)
                for c in [node] + [n for b in branches(node) for n in inside(b)]]

    (top,) = conds(graph.as_graph_def().node)
    small, general = branches(top)
    assert inside(small) == [] and len(inside(general)) >= 2 * 2
    serve, _ = _export(model, tmp_path)
    want = model.predict(TEXTS, verbose=0)
    np.testing.assert_allclose(serve(text=tf.constant(TEXTS))["logits"], want, atol=1e-5)
    for text in TEXTS:  # (int8: each batch's activations quantized with their own range)
        np.testing.assert_allclose(serve(text=tf.constant([text]))["logits"],
                                   model.predict([text], verbose=0), atol=1e-5)


def _int8_cases():
    """Per task: (model of an encoder, serving_default inputs, the matching model.predict
    outputs by signature output name)."""

    def masked_x(model):
        # What serving_ids takes: the ids, a mask id at each position of the predictions.
        packed = model.preprocessor.packer([model.preprocessor.tokenizer(["the cat sat on"]),
                                            model.preprocessor.tokenizer(["a dog ran"])])
        x = {k: v.numpy() for k, v in packed.items()}
        x["input_word_ids"][0, [2, 6]] = model.preprocessor.tokenizer.mask_token_id
        x["masked_lm_positions"] = np.array([[2, 6]], "int32")
        return x

    def top_probabilities(model, x):
        out = model.predict(x, verbose=0)
        logits = out["mlm_logits"] if isinstance(out, dict) else out
        return np.sort(_softmax(logits), axis=-1)[..., ::-1][..., :5]

    def nsp(model, x):
        return _softmax(model.predict(x, verbose=0)["nsp_logits"])

    return {
        "classifier": (lambda e: keras_bert.BertClassifier(
            e, 3, preprocessor=keras_bert.BertPreprocessor(VOCAB, 16)),
            lambda m: ({"text": TEXTS}, {"logits": m.predict(TEXTS, verbose=0)})),
        "token_classifier": (lambda e: keras_bert.BertTokenClassifier(
            e, 3, preprocessor=keras_bert.BertTokenClassifierPreprocessor(VOCAB, 12)),
            lambda m: ({"text": TEXTS}, {"logits": m.predict(TEXTS, verbose=0)})),
        "span_labeler": (lambda e: keras_bert.BertSpanLabeler(
            e, preprocessor=keras_bert.BertPreprocessor(VOCAB, 16)),
            lambda m: ({"question": TEXTS[:3], "context": TEXTS[3:6]},
                       m.predict((TEXTS[:3], TEXTS[3:6]), verbose=0))),
        "multiple_choice": (lambda e: keras_bert.BertMultipleChoice(
            e, 2, preprocessor=keras_bert.BertMultipleChoicePreprocessor(VOCAB, 10)),
            lambda m: ({"context": TEXTS[:2], "choices": [TEXTS[2:4], TEXTS[4:6]]},
                       {"logits": m.predict((TEXTS[:2], [TEXTS[2:4], TEXTS[4:6]]),
                                            verbose=0)})),
        "masked_lm": (lambda e: keras_bert.BertMaskedLM(
            e, preprocessor=keras_bert.BertMaskedLMPreprocessor(VOCAB, 12)),
            lambda m: (masked_x(m), {"top_probabilities": top_probabilities(m, masked_x(m))})),
        "pretrainer": (lambda e: keras_bert.BertPretrainer(
            e, preprocessor=keras_bert.BertPretrainerPreprocessor(VOCAB, 12)),
            lambda m: (masked_x(m), {"next_sentence_probabilities": nsp(m, masked_x(m))})),
    }


@pytest.mark.parametrize("name", ["classifier", "token_classifier", "span_labeler",
                                  "multiple_choice", "masked_lm", "pretrainer"])
def test_int8_task_models_save_reload_export_and_serve(name, tmp_path):
    """After model.quantize("int8"), every task model saves to .keras and loads back int8;
    the reloaded model's export runs on the int8 kernel (a core TensorFlow op: required_ops
    lists the tokenizer's only) and answers what the quantized Keras model predicted."""
    from keras_bert.export.ops import saved_ops
    from keras_bert.layers import int8
    from keras_bert.models import quantization

    build, inputs_and_outputs = _int8_cases()[name]
    model = build(tiny_encoder(seed=5, **TEXT_DEPENDENT))
    _, before = inputs_and_outputs(model)
    model.quantize("int8")
    inputs, want = inputs_and_outputs(model)
    # int8 weights: close to the float32 model, not equal to it. Close: each output moves by
    # less than a fifth of its float32 spread (over its batch, positions and classes); int8
    # moves them by 0.4-11% of it (the most: the 2 x 2 multiple-choice logits).
    for key, value in want.items():
        spread = np.ptp(before[key])
        assert 0 < np.abs(value - before[key]).max() < spread / 5, (key, spread)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.encoder.get_layer("transformer_block_0").query.kernel.dtype == "int8"
    assert quantization.quantized_layers(loaded) == quantization.quantized_layers(model)
    serve, ids = _export(loaded, tmp_path)  # also: required_ops is the tokenizer's ops
    assert int8.OP in saved_ops(str(tmp_path / "model" / "1"))
    # ... and lets oneDNN keep its reordered weights (is_weight_const; saved graphs leave
    # out attributes at their default, which is true for this one)
    from keras_bert.export.ops import _read

    kernels = [node for graph in _read(str(tmp_path / "model" / "1")).meta_graphs
               for function in graph.graph_def.library.function
               for node in function.node_def if node.op == int8.OP]
    assert kernels and all("is_weight_const" not in node.attr or node.attr["is_weight_const"].b
                           for node in kernels)
    signature = ids if name in ("masked_lm", "pretrainer") else serve
    out = signature(**{k: tf.constant(v) for k, v in inputs.items()})
    for key, value in want.items():
        np.testing.assert_allclose(out[key], value, atol=1e-5, err_msg=key)
