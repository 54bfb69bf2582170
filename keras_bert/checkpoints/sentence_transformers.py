"""sentence-transformers models: a Hugging Face BERT plus the modules that make its sentence
embedding (``modules.json``: Transformer -> Pooling -> Dense... -> Normalize).

A directory in this format is a Hugging Face checkpoint (`keras_bert.checkpoints.huggingface`,
at the root or in the Transformer module's folder) with::

    modules.json                       the modules, in order, each with its folder
    sentence_bert_config.json          max_seq_length (and do_lower_case: lower-case first)
    config_sentence_transformers.json  prompts, default_prompt_name, similarity_fn_name
    1_Pooling/config.json              the pooling modes (cls, max, mean, mean_sqrt_len_tokens)
    2_Dense/config.json                a projection: in/out features, bias, activation
    2_Dense/model.safetensors          its weights (linear.weight [out, in], linear.bias)
    3_Normalize/                       L2 normalization (a folder that may be absent)

`read_metadata` describes the embedding under `METADATA_KEY` in keras_bert's own words
(`describe`): ``pooling`` (a list of modes of `keras_bert.layers.sentence_pooling`),
``dense`` (a list of ``{"units", "activation", "use_bias"}``), ``normalize``,
``max_seq_length``, ``prompts``, ``default_prompt_name``, ``similarity_fn_name``, and
``unsupported`` (None, or why keras_bert cannot compute this model's embedding: a module it
does not have, a pooling mode it does not compute; the encoder still loads). The Dense
weights join the canonical weights as ``cls/sentence_embedding/dense_<i>/kernel`` ``[in,
out]`` and ``.../bias`` (`dense_names`). The description travels in a keras_bert preset's
metadata too (a hub handle converted in the cache keeps it), and `write` writes it back as a
folder sentence-transformers loads.

Casing: ``sentence_bert_config.json``'s ``do_lower_case`` true lower-cases every text;
otherwise the tokenizer's config says (as for Hugging Face).
"""

import os
import re

import numpy as np

from keras_bert import storage
from keras_bert.checkpoints import casing, huggingface
from keras_bert.checkpoints.common import CheckpointError, read_json_object

MODULES_FILE = "modules.json"
SBERT_CONFIG_FILE = "sentence_bert_config.json"
ST_CONFIG_FILE = "config_sentence_transformers.json"
MODULE_CONFIG_FILE = "config.json"
METADATA_KEY = "sentence_transformers"

# sentence-transformers' pooling modes -> keras_bert's (`SentencePooling`), and back.
POOLING_MODES = {"cls": "cls", "max": "max", "mean": "mean",
                 "mean_sqrt_len_tokens": "mean_sqrt_len"}
POOLING_TO_ST = {ours: theirs for theirs, ours in POOLING_MODES.items()}
# The legacy pooling_mode_* keys, in the order sentence-transformers concatenates them.
_LEGACY_POOLING = (("pooling_mode_cls_token", "cls"), ("pooling_mode_max_tokens", "max"),
                   ("pooling_mode_mean_tokens", "mean"),
                   ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"),
                   ("pooling_mode_weightedmean_tokens", "weightedmean"),
                   ("pooling_mode_lasttoken", "lasttoken"))
# torch activation classes (the last part of Dense's activation_function) -> Keras' names.
ACTIVATIONS = {"Tanh": "tanh", "Identity": "linear", "ReLU": "relu", "GELU": "gelu",
               "Sigmoid": "sigmoid", "SiLU": "silu"}
TORCH_ACTIVATIONS = {"tanh": "torch.nn.modules.activation.Tanh",
                     "linear": "torch.nn.modules.linear.Identity",
                     "relu": "torch.nn.modules.activation.ReLU",
                     "gelu": "torch.nn.modules.activation.GELU",
                     "sigmoid": "torch.nn.modules.activation.Sigmoid",
                     "silu": "torch.nn.modules.activation.SiLU"}
# The module types sentence-transformers writes (its old names: every version reads them).
MODULE_TYPES = {"Transformer": "sentence_transformers.models.Transformer",
                "Pooling": "sentence_transformers.models.Pooling",
                "Dense": "sentence_transformers.models.Dense",
                "Normalize": "sentence_transformers.models.Normalize"}
TOKENIZER_CONFIG_FILE = huggingface.TOKENIZER_CONFIG_FILE
# The files `write` writes (glob patterns), and the last one moved into place.
FILES = (MODULES_FILE, SBERT_CONFIG_FILE, ST_CONFIG_FILE, huggingface.CONFIG_FILE,
         huggingface.SAFETENSORS_FILE, huggingface.TORCH_FILE, huggingface.VOCAB_FILE,
         TOKENIZER_CONFIG_FILE, "[0-9]*_*/*")
LAST = (MODULES_FILE,)
_KINDS = ("Transformer", "Pooling", "Dense", "Normalize")
_ORDER = re.compile(r"^Transformer Pooling( Dense)*( Normalize)?$")  # what keras_bert computes
_MODULE_DIR = re.compile(r"^\d+_(Pooling|Dense|Normalize)/"
                         r"(config\.json|model\.safetensors|pytorch_model\.bin)$")


def dense_names(index):
    """The canonical names of the ``index``-th Dense module's kernel ``[in, out]`` and bias."""
    prefix = f"cls/sentence_embedding/dense_{index}"
    return f"{prefix}/kernel", f"{prefix}/bias"


def hub_files(names):
    """The files of this format among a hub repository's ``names`` (beside the Hugging Face
    checkpoint's): the three configs and the modules' folders."""
    names = set(names)
    if MODULES_FILE not in names:
        return []
    return sorted(n for n in names if n in (MODULES_FILE, SBERT_CONFIG_FILE, ST_CONFIG_FILE)
                  or _MODULE_DIR.match(n))


# ---- reading ----------------------------------------------------------------------------
def _modules(directory):
    """``[(type, folder)]`` from ``modules.json`` (type: the class name, e.g. ``Pooling``)."""
    path = os.path.join(directory, MODULES_FILE)
    try:
        values = storage.read_json(path)
    except (OSError, ValueError) as e:
        raise CheckpointError(f"Cannot read the sentence-transformers modules {path}: {e}") \
            from None
    if not isinstance(values, list) or not all(
            isinstance(m, dict) and isinstance(m.get("type"), str) for m in values):
        raise CheckpointError(f"{path}: expected a JSON list of modules, each with a type.")
    modules = sorted(values, key=lambda m: m.get("idx", 0))
    return [(m["type"].rsplit(".", 1)[-1], (m.get("path") or "").strip("/")) for m in modules]


def _transformer_dir(directory, modules=None):
    modules = _modules(directory) if modules is None else modules
    folder = next((f for t, f in modules if t == "Transformer"), "")
    return os.path.join(directory, folder) if folder else directory


def _optional_json(path, what):
    return read_json_object(path, what) if storage.isfile(path) else {}


def _pooling(path):
    """The pooling modes (sentence-transformers' names) of a Pooling config, in order."""
    values = _optional_json(os.path.join(path, MODULE_CONFIG_FILE), "Pooling config")
    modes = values.get("pooling_mode")
    if modes is None:
        modes = [mode for key, mode in _LEGACY_POOLING if values.get(key)] or ["mean"]
    modes = [modes] if isinstance(modes, str) else list(modes)
    return modes, values.get("include_prompt", True)


def _dense(directory, folder):
    """A Dense module's description, and why it is not supported (or None)."""
    path = os.path.join(directory, folder, MODULE_CONFIG_FILE)
    values = read_json_object(path, "Dense config")
    activation = str(values.get("activation_function") or "torch.nn.modules.activation.Tanh")
    spec = {"units": values.get("out_features"), "activation": ACTIVATIONS.get(
        activation.rsplit(".", 1)[-1]), "use_bias": bool(values.get("bias", True)),
        "in_features": values.get("in_features")}
    if spec["activation"] is None:
        return spec, (f"{path}: activation_function {activation!r} is not one keras_bert "
                      f"computes ({', '.join(sorted(ACTIVATIONS))})")
    if values.get("use_residual"):
        return spec, f"{path}: use_residual is not supported"
    if not all(isinstance(spec[k], int) for k in ("units", "in_features")):
        return spec, f"{path}: in_features and out_features must be integers"
    return spec, None


def describe(directory, config=None):
    """The sentence embedding ``directory`` computes, in keras_bert's words (see the module
    docstring)."""
    modules = _modules(directory)
    transformer = _transformer_dir(directory, modules)
    config = huggingface.read_config(transformer) if config is None else config
    sbert = _optional_json(os.path.join(directory, SBERT_CONFIG_FILE), "sentence-bert config")
    st = _optional_json(os.path.join(directory, ST_CONFIG_FILE),
                        "sentence-transformers config")
    out = {"pooling": ["mean"], "dense": [], "normalize": False,
           "max_seq_length": _max_seq_length(sbert, transformer, config),
           "prompts": {str(k): str(v) for k, v in (st.get("prompts") or {}).items()},
           "default_prompt_name": st.get("default_prompt_name"),
           "similarity_fn_name": st.get("similarity_fn_name") or "cosine",
           "unsupported": None}
    problems = []
    model_type = st.get("model_type")
    if model_type not in (None, "SentenceTransformer"):
        problems.append(f"{ST_CONFIG_FILE} says model_type {model_type!r}, not a "
                        "SentenceTransformer")
    kinds = [kind for kind, _ in modules]
    unknown = [f"module {i} is a {kind}" for i, kind in enumerate(kinds) if kind not in _KINDS]
    if unknown:
        problems.append(f"{', '.join(unknown)}, which keras_bert does not compute")
    elif not _ORDER.match(" ".join(kinds)):
        problems.append(f"its modules run {' -> '.join(kinds) or 'nothing'}")
    for kind, folder in modules:
        path = os.path.join(directory, folder)
        if kind == "Pooling":
            modes, include_prompt = _pooling(path)
            bad = [m for m in modes if m not in POOLING_MODES]
            if bad:
                problems.append(f"pooling mode {', '.join(bad)} is not one keras_bert "
                                f"computes ({', '.join(POOLING_MODES)})")
            if not include_prompt and any(out["prompts"].values()):
                problems.append("its Pooling leaves the prompt out (include_prompt false)")
            out["pooling"] = [POOLING_MODES.get(m, m) for m in modes]
        elif kind == "Dense":
            spec, problem = _dense(directory, folder)
            out["dense"].append({k: spec[k] for k in ("units", "activation", "use_bias")})
            if problem:
                problems.append(problem)
        elif kind == "Normalize":
            out["normalize"] = True
    if sbert.get("do_lower_case") is True:
        out["do_lower_case"] = True
    if problems:
        out["unsupported"] = (f"{directory}: " + "; ".join(problems) + " (keras_bert computes "
                              "Transformer -> Pooling -> Dense... -> Normalize)")
    return out


def _max_seq_length(sbert, transformer, config):
    """sentence-transformers' rule: sentence_bert_config.json's max_seq_length, else the
    tokenizer's model_max_length, at most the model's max_position_embeddings."""
    value = sbert.get("max_seq_length")
    if isinstance(value, int) and value > 0:
        return value
    tokenizer = _optional_json(os.path.join(transformer, TOKENIZER_CONFIG_FILE),
                               "Hugging Face tokenizer config")
    value = tokenizer.get("model_max_length")
    limit = config.max_position_embeddings
    return min(value, limit) if isinstance(value, int) and value > 0 else limit


def read_dense_weights(directory):
    """The Dense modules' weights under their canonical names (`dense_names`)."""
    weights = {}
    dense = [folder for kind, folder in _modules(directory) if kind == "Dense"]
    for index, folder in enumerate(dense):
        tensors, source = huggingface._load_tensors(os.path.join(directory, folder))
        kernel, bias = dense_names(index)
        if "linear.weight" not in tensors:
            raise CheckpointError(f"{source}: no linear.weight; not a sentence-transformers "
                                  "Dense module's weights.")
        weights[kernel] = np.asarray(tensors["linear.weight"], np.float32).T  # [in, out]
        if "linear.bias" in tensors:
            weights[bias] = np.asarray(tensors["linear.bias"], np.float32)
    return weights


# ---- writing ----------------------------------------------------------------------------
def default_description():
    """What sentence-transformers makes of a plain BERT: mean pooling, nothing after."""
    return {"pooling": ["mean"], "dense": [], "normalize": False, "max_seq_length": None,
            "prompts": {}, "default_prompt_name": None, "similarity_fn_name": "cosine",
            "unsupported": None}


def write(directory, config, weights, description, vocab_path=None, do_lower_case=None):
    """Writes a sentence-transformers folder into ``directory``: the encoder's Hugging Face
    files at its root (`keras_bert.checkpoints.huggingface.write_directory`), the tokenizer's
    config, and the modules of ``description`` (`describe`'s form) with the Dense weights
    ``weights`` holds under `dense_names`. Returns ``directory``."""
    if description.get("unsupported"):
        raise CheckpointError(f"Cannot write a sentence-transformers model: "
                              f"{description['unsupported']}.")
    encoder = {k: v for k, v in weights.items() if k.startswith("bert/")}
    huggingface.write_directory(directory, config, encoder, vocab_path=vocab_path,
                                do_lower_case=do_lower_case)
    max_seq_length = description.get("max_seq_length") or config.max_position_embeddings
    tokenizer = {"tokenizer_class": "BertTokenizer", "model_max_length": int(max_seq_length),
                 "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                 "unk_token": "[UNK]", "mask_token": "[MASK]"}
    if do_lower_case is not None:  # (unknown: transformers' default, lower case)
        tokenizer["do_lower_case"] = bool(do_lower_case)
    storage.write_json(os.path.join(directory, TOKENIZER_CONFIG_FILE), tokenizer)
    storage.write_json(os.path.join(directory, SBERT_CONFIG_FILE), {
        "max_seq_length": int(max_seq_length),
        "do_lower_case": bool(description.get("do_lower_case", False))})
    storage.write_json(os.path.join(directory, ST_CONFIG_FILE), {
        "model_type": "SentenceTransformer", "prompts": dict(description.get("prompts") or {}),
        "default_prompt_name": description.get("default_prompt_name"),
        "similarity_fn_name": description.get("similarity_fn_name") or "cosine"})
    modules = [("Transformer", "")]
    modules.append(("Pooling", _write_pooling(directory, config, description["pooling"])))
    width = len(description["pooling"]) * config.hidden_size
    for index, spec in enumerate(description.get("dense") or []):
        modules.append(("Dense", _write_dense(directory, len(modules), index, spec, width,
                                              weights)))
        width = spec["units"]
    if description.get("normalize"):
        folder = f"{len(modules)}_Normalize"
        storage.write_json(os.path.join(directory, folder, MODULE_CONFIG_FILE), {})
        modules.append(("Normalize", folder))
    storage.write_json(os.path.join(directory, MODULES_FILE), [
        {"idx": i, "name": str(i), "path": folder, "type": MODULE_TYPES[kind]}
        for i, (kind, folder) in enumerate(modules)])
    return directory


def _write_pooling(directory, config, modes):
    folder = "1_Pooling"
    theirs = [POOLING_TO_ST[m] for m in modes]
    legacy = [mode for _, mode in _LEGACY_POOLING]
    values = {"word_embedding_dimension": config.hidden_size, "include_prompt": True}
    if theirs == sorted(theirs, key=legacy.index):  # the order every version reads
        values.update({key: mode in theirs for key, mode in _LEGACY_POOLING})
    else:
        values = {"embedding_dimension": config.hidden_size, "pooling_mode": theirs,
                  "include_prompt": True}
    storage.write_json(os.path.join(directory, folder, MODULE_CONFIG_FILE), values)
    return folder


def _write_dense(directory, position, index, spec, in_features, weights):
    from safetensors.numpy import save

    folder = f"{position}_Dense"
    kernel, bias = dense_names(index)
    if kernel not in weights:
        raise CheckpointError(f"Cannot write Dense module {index}: no weights {kernel}.")
    storage.write_json(os.path.join(directory, folder, MODULE_CONFIG_FILE), {
        "in_features": int(in_features), "out_features": int(spec["units"]),
        "bias": bool(spec.get("use_bias", True)),
        "activation_function": TORCH_ACTIVATIONS[spec.get("activation") or "linear"]})
    tensors = {"linear.weight": np.ascontiguousarray(np.asarray(weights[kernel], np.float32).T)}
    if spec.get("use_bias", True):
        tensors["linear.bias"] = np.asarray(weights[bias], np.float32)
    storage.write_bytes(os.path.join(directory, folder, huggingface.SAFETENSORS_FILE),
                        save(tensors, metadata={"format": "pt"}))
    return folder


# ---- the format interface (`keras_bert.checkpoints.formats.FORMATS`) ----------------------
def detect(directory):
    """True when ``directory`` holds ``modules.json`` and its Transformer's ``config.json``."""
    if not storage.isfile(os.path.join(directory, MODULES_FILE)):
        return False
    try:
        transformer = _transformer_dir(directory)
    except CheckpointError:
        return False
    return storage.isfile(os.path.join(transformer, huggingface.CONFIG_FILE))


def read_config(directory):
    return huggingface.read_config(_transformer_dir(directory))


def read_metadata(directory):
    """``{METADATA_KEY: describe(directory)}``."""
    return {METADATA_KEY: describe(directory)}


def read_head(directory, metadata):
    """The Transformer module's head (`huggingface.read_head`): a ``BertModel``'s, None."""
    return huggingface.read_head(_transformer_dir(directory), metadata)


def check_files(directory, metadata):
    """The format records nothing to check its files against."""


def recorded_casing(directory):
    """``[(what, do_lower_case)]``: sentence_bert_config.json's ``do_lower_case`` when true
    (it lower-cases every text first), else what the tokenizer's files say."""
    path = os.path.join(directory, SBERT_CONFIG_FILE)
    if storage.isfile(path) and read_json_object(path).get("do_lower_case") is True:
        return [casing.recorded(path, "do_lower_case", True)]
    return huggingface.recorded_casing(_transformer_dir(directory))


def vocab_file(directory):
    return huggingface.vocab_file(_transformer_dir(directory))


def vocabulary(directory):
    """The Transformer module's vocabulary (`huggingface.vocabulary`)."""
    return huggingface.vocabulary(_transformer_dir(directory))


def list_variables(directory, config):
    """The Transformer module's variables (`huggingface.list_variables`); the Dense modules'
    are checked when read."""
    return huggingface.list_variables(_transformer_dir(directory), config)


def check_weights(directory):
    """Weights are found when read; nothing to check up front."""


def read_weights(directory, config):
    """The encoder's canonical weights and the Dense modules' (`dense_names`)."""
    weights = huggingface.read_weights(_transformer_dir(directory), config)
    weights.update(read_dense_weights(directory))
    return weights
