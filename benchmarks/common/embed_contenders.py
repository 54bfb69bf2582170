"""The contenders of benchmarks/embed_cpu.py: one sentence-embedding model (mean pooling,
L2-normalized: all-MiniLM-L6-v2's recipe) served each way, strings in, vectors out.

Each entry of `CONTENDERS` (`contenders.Contender`) makes, from the shared `EmbedSetup`, a
runner ``texts (a list of str) -> embeddings (numpy [len(texts), dim])`` and names the
modules it imports (benchmarks/common/harness.py's `require_contenders` checks them); `ALL`,
`NEEDS` and `KINDS` are its columns. The peers get exactly the keras_bert model's weights:
its sentence-transformers folder (``save_to_preset(format="sentence_transformers")``), loaded
by sentence-transformers, and the same BERT with mean pooling and normalization exported to
ONNX as fastembed's models are, run by ONNX Runtime with the ``tokenizers`` fast tokenizer.
Every runner pads each batch to its longest text.
"""

import functools
import os

import numpy as np

from benchmarks.common import cpu_timing
from benchmarks.common.contenders import (ORT_NEEDS, Contender, Setup, litert_runner,
                                          ort_fp32, ort_int8, saved_model_runner, tables)


class EmbedSetup(Setup):
    """What the contenders share, each built once on first use (`Setup`'s tokenizer and ONNX
    export and quantization, for an embedder)."""

    onnx_output = "sentence_embedding"

    def keras_model(self, quantized=False):
        """A fresh copy of the embedder, its preprocessor packing at most seq_length."""
        import keras
        import keras_bert

        if self.model_path == "tiny":
            from tests.export.serving_models import VOCAB

            keras.utils.set_random_seed(0)
            encoder = keras_bert.BertEncoder(keras_bert.BertConfig(
                vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2,
                num_attention_heads=2, intermediate_size=32, max_position_embeddings=64))
            model = keras_bert.BertTextEmbedder(
                encoder, preprocessor=keras_bert.BertTextEmbedderPreprocessor(VOCAB, 64))
        else:
            model = keras_bert.BertTextEmbedder.from_preset(self.model_path)
        if model.pooling != "mean" or not model.normalize or model.dense:
            raise SystemExit("embed_cpu.py: the peers compute mean pooling and normalization "
                             f"only; {self.model_path} has pooling={model.pooling!r}, "
                             f"normalize={model.normalize}, dense={model.dense}.")
        model.preprocessor = keras_bert.BertTextEmbedderPreprocessor(
            model.preprocessor.tokenizer, seq_length=self.seq_length)
        model.prompts, model.default_prompt_name = {}, None  # every runner embeds the text
        if quantized:
            model.quantize("int8")
        return model

    @functools.cached_property
    def hf_dir(self):
        """The model as a sentence-transformers folder (the BERT in Hugging Face's format at
        its root, with vocab.txt)."""
        directory = os.path.join(self.workdir, "sentence_transformers")
        self.model.save_to_preset(directory, format="sentence_transformers")
        return directory

    @functools.cached_property
    def fast_tokenizer(self):
        """The ``tokenizers`` tokenizer (what fastembed runs): truncation at seq_length,
        padding to the longest text of each batch."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(self.hf_tokenizer.backend_tokenizer.to_str())
        tokenizer.enable_truncation(max_length=self.seq_length)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        return tokenizer

    def hf_model(self):
        """BertModel + mean pooling + normalization (a torch module), in eval mode."""
        import torch
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()  # "Loading weights" on stderr
        torch.set_num_threads(self.threads)
        bert = transformers.BertModel.from_pretrained(self.hf_dir, add_pooling_layer=False,
                                                      attn_implementation="eager")

        class MeanPooled(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask, token_type_ids):
                tokens = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                                   token_type_ids=token_type_ids).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
                pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                return torch.nn.functional.normalize(pooled, p=2, dim=1)

        return MeanPooled().eval()

    def ort_feeds(self, texts):
        """The ONNX file's inputs from the ``tokenizers`` tokenizer (as fastembed feeds it)."""
        encoded = self.fast_tokenizer.encode_batch(texts)
        return {"input_ids": np.array([e.ids for e in encoded], np.int64),
                "attention_mask": np.array([e.attention_mask for e in encoded], np.int64),
                "token_type_ids": np.array([e.type_ids for e in encoded], np.int64)}

    def ort_result(self, output):
        """The embeddings, as the ONNX file computes them."""
        return output


def keras_bert_fp32(setup):
    return saved_model_runner(setup, quantized=False, output="embeddings")


def keras_bert_int8(setup):
    return saved_model_runner(setup, quantized=True, output="embeddings")


def litert_fp32(setup):
    return litert_runner(setup, None, output="embeddings")


def litert_int8(setup):
    return litert_runner(setup, "int8", output="embeddings")


def sentence_transformers(setup):
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    transformers.utils.logging.disable_progress_bar()  # "Loading weights" on stderr
    torch.set_num_threads(setup.threads)
    model = SentenceTransformer(setup.hf_dir, device="cpu")
    model.max_seq_length = setup.seq_length
    return lambda texts: model.encode(texts, batch_size=len(texts), convert_to_numpy=True,
                                      show_progress_bar=False)


# The ONNX Runtime contenders are serve_cpu.py's (`contenders.ort_fp32`, `ort_int8`), fed and
# read by `EmbedSetup`.
_ORT = ORT_NEEDS + ("tokenizers",)
CONTENDERS = {
    "keras_bert_fp32": Contender(keras_bert_fp32),
    "keras_bert_int8": Contender(keras_bert_int8, precision="int8", float_of="keras_bert_fp32"),
    "litert_fp32": Contender(litert_fp32, ("ai_edge_litert",)),
    "litert_int8": Contender(litert_int8, ("ai_edge_litert",), precision="int8",
                             float_of="litert_fp32"),
    "sentence_transformers": Contender(sentence_transformers, ("sentence_transformers", "torch"),
                                       ours=False),
    "ort_fp32": Contender(ort_fp32, _ORT, ours=False),
    "ort_int8": Contender(ort_int8, _ORT, ours=False, precision="int8", float_of="ort_fp32"),
}
ALL, NEEDS, KINDS = tables(CONTENDERS)


def min_cosine(a, b):
    """The smallest cosine between the rows of ``a`` and ``b`` ([n, dim] each)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    return float(cos.min())


def summarize(runners, rates, latency, vectors):
    """One row per contender: embeddings/s, ratio to ONNX Runtime int8 and to the fastest
    peer, batch-1 ms, the smallest cosine to its own float32 model (quantized ones) and to
    keras_bert's float32 SavedModel (when it ran)."""
    peers = [n for n in runners if not KINDS[n][0]]
    fastest = max((rates[n] for n in peers), default=None)
    ort8 = rates.get("ort_int8")
    reference = vectors.get("keras_bert_fp32")
    rows = []
    for name in runners:
        ours, precision, fp32 = KINDS[name]
        rows.append({
            "contender": name, "ours": ours, "precision": precision,
            "embeddings_per_s": round(rates[name], 1),
            "vs_ort_int8": round(rates[name] / ort8, 3) if ort8 else None,
            "vs_fastest_peer": round(rates[name] / fastest, 3) if fastest else None,
            "batch1_median_ms": round(latency[name], 2),
            "min_cosine_to_own_fp32": (round(min_cosine(vectors[name], vectors[fp32]), 5)
                                       if fp32 in vectors else None),
            "min_cosine_to_keras_bert_fp32": (None if reference is None else
                                              round(min_cosine(vectors[name], reference), 5)),
        })
    return rows


def print_table(rows):
    def show(value, form):
        return "n/a" if value is None else form.format(value)

    print()
    print("| contender | ours | embeddings/s (batch 32) | vs ORT int8 | batch-1 median ms "
          "| min cosine to own fp32 | min cosine to keras_bert fp32 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['contender']} | {'yes' if r['ours'] else ''} | "
              f"{r['embeddings_per_s']:.1f} | {show(r['vs_ort_int8'], '{:.2f}x')} | "
              f"{r['batch1_median_ms']:.2f} | {show(r['min_cosine_to_own_fp32'], '{:.4f}')} | "
              f"{show(r['min_cosine_to_keras_bert_fp32'], '{:.4f}')} |")
    print()


def targets(rows):
    """The acceptance ratios: keras_bert's fastest path against ONNX Runtime int8, at batch
    32 and at batch 1, and its cosine to float32."""
    by = {r["contender"]: r for r in rows}
    ours = [r for r in rows if r["ours"]]
    fastest = max(ours, key=lambda r: r["embeddings_per_s"], default=None)
    quickest = min(ours, key=lambda r: r["batch1_median_ms"], default=None)
    ort8 = by.get("ort_int8")
    return {
        "fastest_ours": fastest and fastest["contender"],
        "fastest_ours_vs_ort_int8": (round(fastest["embeddings_per_s"]
                                           / ort8["embeddings_per_s"], 3)
                                     if fastest and ort8 else None),
        "fastest_ours_min_cosine_to_fp32": fastest and (
            fastest["min_cosine_to_own_fp32"] or fastest["min_cosine_to_keras_bert_fp32"]),
        "quickest_ours_batch1": quickest and quickest["contender"],
        "quickest_ours_batch1_vs_ort_int8": (round(quickest["batch1_median_ms"]
                                                   / ort8["batch1_median_ms"], 3)
                                             if quickest and ort8 else None),
    }


def describe_targets(t):
    lines = ["Targets (ratios in this run):"]

    def show(label, value, bar, higher=True):
        lines.append(cpu_timing.target_line(label, value, bar, higher))

    show(f"fastest of ours ({t['fastest_ours']}) / ONNX Runtime int8, embeddings/s",
         t["fastest_ours_vs_ort_int8"], 1.0)
    show("  its smallest cosine to float32", t["fastest_ours_min_cosine_to_fp32"], 0.99)
    show(f"batch-1 median of our quickest ({t['quickest_ours_batch1']}) / ONNX Runtime int8's",
         t["quickest_ours_batch1_vs_ort_int8"], 1.0, higher=False)
    return lines
