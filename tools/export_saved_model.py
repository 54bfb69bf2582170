"""Exports a keras_bert model as a SavedModel: the encoder (TF Hub BERT encoder format), the
preprocessing model (TF Hub BERT preprocessing format), or the end-to-end serving model; or
as a LiteRT model with the tokenizer inside (``--kind=litert``).

    python tools/export_saved_model.py --model_file=run/model.keras --kind=serving \
        --export_dir=/models/sentiment/1
    python tools/export_saved_model.py --model_file=run/model.keras --kind=serving \
        --export_dir=/models/sentiment --version=next      # one past the newest version
    python tools/export_saved_model.py --preset=minilm_l6 --kind=encoder \
        --export_dir=/tmp/minilm_encoder
    python tools/export_saved_model.py --preset=minilm_l6 --kind=preprocessor \
        --seq_length=128 --export_dir=/tmp/minilm_preprocess
    python tools/export_saved_model.py --model_file=run/model.keras --kind=serving \
        --quantize=int8 --export_dir=/models/sentiment/2    # int8: the fastest on a CPU
    python tools/export_saved_model.py --model_file=run/model.keras --kind=litert \
        --quantize=int8 --export_dir=/models/sentiment/1    # writes .../1/model.tflite

A serving export goes to TF Serving's layout, <base>/<name>/<version>: --export_dir is the
version directory, or the model base path with --version (a number, or "next"). Serving
exports of a preset need --task (a fresh head; a preset saved by save_to_preset from a task
model brings its own). A LiteRT export is the file model.tflite in the version directory
(beside a SavedModel there, if any), where tools/serve.py --prefer_tflite_model (and TF
Serving's) looks for it; a classifier, a multiple-choice model or an encoder.
--quantize=int8 quantizes the model's dense layers as model.quantize("int8") does before a
serving or encoder SavedModel is written (oneDNN's int8 kernel: docs/export.md), and
quantizes a LiteRT model's weights. The flags are checked before anything is loaded; every
problem is one line on stderr and exit status 1. On success the tool prints one line: what
it wrote, where, and the custom ops a serving binary needs (keras_bert.export.required_ops).
"""

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the keras_bert here

from absl import app, flags, logging  # noqa: E402

import keras_bert  # noqa: E402  (loads TensorFlow without its C++ start-up lines)
from keras_bert import export, storage  # noqa: E402
from keras_bert.export import export_dirs  # noqa: E402
from keras_bert.text.packer import min_seq_length  # noqa: E402

KINDS = ("encoder", "preprocessor", "serving", "litert")
VERSIONED = ("serving", "litert")  # kinds written into TF Serving's version directories
TASKS = {  # --task -> (class name, the flag giving its size)
    "classification": ("BertClassifier", "num_classes"),
    "regression": ("BertClassifier", None),
    "tagging": ("BertTokenClassifier", "num_classes"),
    "span_labeling": ("BertSpanLabeler", None),
    "multiple_choice": ("BertMultipleChoice", "num_choices"),
    "masked_lm": ("BertMaskedLM", None),
    "pretraining": ("BertPretrainer", None),
}

flags.DEFINE_string("preset", None, "A preset name (keras_bert.presets()) or directory.")
flags.DEFINE_string("model_file", None, "A .keras file saved from a keras_bert model "
                    "(tools/finetune.py writes model.keras).")
flags.DEFINE_enum("kind", "serving", KINDS, "What to export.")
flags.DEFINE_string("export_dir", None, "Where to write the SavedModel (new or empty); for "
                    "--kind=serving the version directory <base>/<name>/<version>, or the "
                    "base path with --version.", required=True)
flags.DEFINE_string("version", None, "--kind=serving or litert: export to "
                    "--export_dir/<version> (a number, or 'next': one past the newest there).")
flags.DEFINE_enum("quantize", None, ["int8"], "int8 weights (default: float32): "
                  "--kind=serving and encoder quantize the model as model.quantize('int8') "
                  "does (activations quantized at each call); --kind=litert, dynamic-range "
                  "quantization.")
flags.DEFINE_enum("task", None, list(TASKS), "--preset: the task model to build for "
                  "--kind=serving (and masked_lm/pretraining for an encoder with its MLM head).")
flags.DEFINE_integer("num_classes", None, "--task=classification/tagging: classes.",
                     lower_bound=2)
flags.DEFINE_integer("num_choices", None, "--task=multiple_choice: choices per question.",
                     lower_bound=2)
flags.DEFINE_integer("seq_length", 128, "--preset: the preprocessor's sequence length (at "
                     "least 3: [CLS] a [SEP]; 5 for --pairs, span_labeling and "
                     "multiple_choice: [CLS] a [SEP] b [SEP]).", lower_bound=3)
flags.DEFINE_bool("pairs", False, "--kind=serving of a classifier or masked LM: "
                  "serving_default takes text_a and text_b.")
flags.DEFINE_list("label_names", None, "--kind=serving of a classifier or tagger: class "
                  "names in id order (adds the labels outputs).")
flags.DEFINE_integer("top_k", 5, "--kind=serving of a masked LM: predictions per [MASK].",
                     lower_bound=1)
FLAGS = flags.FLAGS


@flags.multi_flags_validator(["preset", "model_file"], message=(
    "Give --preset or --model_file, exactly one."))
def _one_source(values):
    return bool(values["preset"]) != bool(values["model_file"])


@flags.validator("model_file")
def _model_file_exists(path):
    if path and not storage.isfile(path):
        raise flags.ValidationError(f"no such file: {path}")
    if path and not path.endswith(".keras"):
        raise flags.ValidationError(f"{path} is not a .keras file (model.save('model.keras'))")
    return True


@flags.multi_flags_validator(["preset", "model_file", "kind", "task", "num_classes",
                              "num_choices"])
def _task_flags(values):
    task = values["task"]
    if task and values["model_file"]:
        raise flags.ValidationError("--task builds a model from --preset; a --model_file "
                                    "already holds one")
    if values["preset"] and values["kind"] == "serving" and not task:
        raise flags.ValidationError("--kind=serving of a --preset needs --task (the model to "
                                    f"build: {', '.join(TASKS)})")
    if values["kind"] == "litert" and task not in (None, "classification", "regression",
                                                   "multiple_choice"):
        raise flags.ValidationError(f"--kind=litert exports a classifier, a multiple-choice "
                                    f"model or an encoder, not --task={task}")
    size = TASKS[task][1] if task else None
    if size and values[size] is None:
        raise flags.ValidationError(f"--task={task} needs --{size}")
    return True


@flags.multi_flags_validator(["seq_length", "pairs", "task"])
def _seq_length_holds_pairs(values):
    pairs = values["pairs"] or values["task"] in ("span_labeling", "multiple_choice")
    if pairs and values["seq_length"] < min_seq_length(2):
        what = "--pairs" if values["pairs"] else f"--task={values['task']}"
        raise flags.ValidationError(
            f"--seq_length={values['seq_length']} is too short for {what}, which packs text "
            f"pairs: [CLS] a [SEP] b [SEP] needs at least {min_seq_length(2)}")
    return True


@flags.multi_flags_validator(["kind", "quantize"])
def _quantize_weights(values):
    if values["quantize"] and values["kind"] == "preprocessor":
        raise flags.ValidationError("--quantize applies to --kind=serving, encoder and litert "
                                    "(a preprocessor has no weights)")
    return True


@flags.multi_flags_validator(["export_dir", "kind", "version"])
def _export_dir(values):
    if values["version"] is not None:
        if values["kind"] not in VERSIONED:
            raise flags.ValidationError("--version applies to --kind=serving and litert only")
        if values["version"] != "next" and not values["version"].isdigit():
            raise flags.ValidationError(f"--version={values['version']}: a number, or 'next'")
    try:
        if values["kind"] == "litert":
            _check_litert_target(_target(values))
        else:
            export_dirs.check_target(_target(values), versioned=values["kind"] == "serving")
    except export_dirs.ExportError as error:
        raise flags.ValidationError(str(error)) from None
    return True


def _check_litert_target(version_dir):
    """A version directory whose model.tflite does not exist yet (a SavedModel may be there)."""
    from keras_bert.export import litert_model

    if not os.path.basename(version_dir.rstrip("/")).isdigit():
        export_dirs.check_target(version_dir, versioned=True)  # the layout's own message
    if storage.exists(version_dir) and not storage.isdir(version_dir):
        raise export_dirs.ExportError(f"export_dir={version_dir} exists and is not a directory.")
    path = os.path.join(version_dir, litert_model.SERVING_FILE)
    if storage.exists(path):
        raise export_dirs.ExportError(f"{path} exists; an export never overwrites one (give "
                                      "another version, e.g. --version=next).")


def _target(values):
    """The SavedModel directory the flags name."""
    if values["version"] is None:
        return values["export_dir"]
    if values["version"] == "next":
        return export_dirs.next_version(values["export_dir"])
    return os.path.join(values["export_dir"], str(int(values["version"])))


def main(argv):
    del argv
    logging.set_verbosity(logging.ERROR)
    target = _target({"export_dir": FLAGS.export_dir, "version": FLAGS.version})
    try:
        with keras_bert.backend.quiet_native_stderr():
            model = _load()
            if FLAGS.quantize and FLAGS.kind != "litert":
                _quantize(model)
            if FLAGS.kind == "encoder":
                path = export.export_encoder(model, target)
            elif FLAGS.kind == "preprocessor":
                path = export.export_preprocessor(model, target)
            elif FLAGS.kind == "litert":
                return _export_litert(model, target)
            else:
                path = export.export_model(model, target, **_serving_options(model))
    except (ValueError, TypeError, OSError) as error:
        sys.exit(f"export_saved_model.py: {error}")
    ops = export.required_ops(path)
    precision = f"{FLAGS.quantize} " if FLAGS.quantize else ""
    print(f"Exported the {precision}{FLAGS.kind} SavedModel of {type(model).__name__} to "
          f"{path}; custom ops: {', '.join(ops) if ops else 'none'}")


def _quantize(model):
    """``model.quantize(FLAGS.quantize)``, refused for a model that is quantized already."""
    from keras_bert.models import quantization

    if quantization.quantized_layers(model):
        source = FLAGS.model_file or FLAGS.preset
        raise ValueError(f"--quantize={FLAGS.quantize}: {source} holds a quantized model "
                         "already; export it without --quantize.")
    model.quantize(FLAGS.quantize)


def _export_litert(model, version_dir):
    from keras_bert.export import litert_model

    options = {"quantize": FLAGS.quantize}
    if isinstance(model, keras_bert.BertEncoder):
        options["seq_length"] = FLAGS.seq_length
    elif FLAGS.pairs or FLAGS.label_names:
        options.update(pairs=FLAGS.pairs, label_names=FLAGS.label_names)
    path = os.path.join(version_dir, litert_model.SERVING_FILE)
    export.export_litert(model, path, **options)
    ops = ", ".join(sorted(litert_model.REGISTRARS))
    print(f"Exported the LiteRT model ({FLAGS.quantize or 'float32'}) of "
          f"{type(model).__name__} to {path} ({storage.size(path) / 2**20:.1f} MiB); custom "
          f"ops: {ops} (tensorflow-text's LiteRT kernels)")


def _load():
    """The model (or preprocessor) to export, from --model_file or --preset."""
    if FLAGS.model_file:
        import keras

        model = keras.saving.load_model(FLAGS.model_file, compile=False)  # no optimizer needed
        kinds = (keras_bert.models.Task,) if FLAGS.kind == "serving" else (
            keras_bert.models.Task, keras_bert.BertEncoder, keras_bert.BertPreprocessor)
        if not isinstance(model, kinds):
            wants = ("a keras_bert task model" if FLAGS.kind == "serving" else
                     "a keras_bert task model, BertEncoder or BertPreprocessor")
            raise ValueError(f"--kind={FLAGS.kind} exports {wants}; {FLAGS.model_file} holds "
                             f"a {type(model).__name__}.")
        return model
    if FLAGS.kind == "preprocessor":
        return keras_bert.BertPreprocessor.from_preset(FLAGS.preset, seq_length=FLAGS.seq_length)
    if not FLAGS.task:
        return keras_bert.BertEncoder.from_preset(FLAGS.preset)
    name, size = TASKS[FLAGS.task]
    kwargs = {"seq_length": FLAGS.seq_length}
    if FLAGS.task == "regression":
        kwargs["num_classes"] = 1
    elif size:
        kwargs[size] = getattr(FLAGS, size)
    return getattr(keras_bert, name).from_preset(FLAGS.preset, **kwargs)


def _serving_options(model):
    options = {"pairs": FLAGS.pairs, "label_names": FLAGS.label_names}
    if isinstance(model, (keras_bert.BertMaskedLM, keras_bert.BertPretrainer)):
        options["top_k"] = FLAGS.top_k
    return options


if __name__ == "__main__":
    app.run(main)
