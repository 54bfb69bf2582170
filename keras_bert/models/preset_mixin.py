"""`PresetMixin`: the one ``from_preset`` / ``save_to_preset`` shared by every keras_bert model.

A model class mixes it in and provides, if it differs from the defaults here:

* ``_from_preset_config(config, **kwargs)``: build the model from a `BertConfig` (default:
  ``cls(config, **kwargs)``);
* ``_load_preset_weights(weights, source)``: assign the canonical weights (default:
  ``self.set_canonical_weights``);
* ``_preset_weights()``: the canonical dict to save (default: ``get_canonical_weights()``);
* ``_preset_config()``: the `BertConfig` to save (default: ``self.bert_config``);
* ``_preset_model_arguments()``: the constructor arguments ``from_preset`` passes on
  (default: the keyword parameters of ``__init__`` but ``config``).
"""

from keras_bert.config import BertConfig
from keras_bert.layers.arguments import check_kwargs, keyword_parameters
from keras_bert.presets import load_preset

# Keyword arguments of from_preset that steer loading rather than the model.
_LOAD_OPTIONS = ("url", "sha256", "do_lower_case", "progress")


def split_kwargs(cls, kwargs):
    """Splits ``from_preset`` kwargs into (load options, config overrides, model kwargs).

    Raises `TypeError` naming any argument that is none of these, before anything is loaded.
    """
    fields = tuple(BertConfig().to_dict())
    check_kwargs(f"{cls.__name__}.from_preset()", kwargs, {
        "BertConfig fields": fields,
        "loading options": _LOAD_OPTIONS,
        f"{cls.__name__} arguments": cls._preset_model_arguments(),
    })
    load = {k: v for k, v in kwargs.items() if k in _LOAD_OPTIONS}
    overrides = {k: v for k, v in kwargs.items() if k in fields}
    model = {k: v for k, v in kwargs.items() if k not in load and k not in overrides}
    return load, overrides, model


class PresetMixin:
    """Adds ``from_preset`` and ``save_to_preset`` to a model with canonical weights."""

    @classmethod
    def from_preset(cls, name_or_path, load_weights=True, **kwargs):
        """Builds the model from a preset and loads its weights.

        Args:
            name_or_path: a registered name (``keras_bert.presets()`` lists them), a local
                directory in keras_bert, Google, Hugging Face or keras-hub format, or a
                ``.zip`` of a Google checkpoint.
            load_weights: False builds the architecture with fresh random weights; a local
                directory then needs only its config (and vocabulary), no weights file, and
                a registry name downloads nothing (the cached copy is used when there).
            **kwargs: `BertConfig` fields to override (e.g. ``hidden_dropout_prob=0.2``),
                loading options (``url``, ``sha256``, ``do_lower_case``, ``progress``), and
                the model's own constructor arguments (e.g. ``dtype``, ``name``). Any other
                name is a `TypeError` that lists these, raised before anything is loaded.
        """
        load, overrides, kwargs = split_kwargs(cls, kwargs)
        preset = load_preset(name_or_path, require_weights=load_weights, **load)
        config = preset.config.replace(**overrides) if overrides else preset.config
        model = cls._from_preset_config(config, **kwargs)
        if load_weights:
            model._load_preset_weights(preset.weights(config), source=preset.path)
        model.vocab_path = preset.vocab_path
        model.do_lower_case = preset.do_lower_case
        model.preset_name = preset.name
        return model

    def save_to_preset(self, directory):
        """Writes config, vocabulary and weights in keras_bert's layout.

        The layout (`keras_bert.checkpoints.layout`) is a Google checkpoint directory plus
        ``keras_bert.json``; ``from_preset(directory)`` loads it back.
        """
        from keras_bert.checkpoints import layout

        layout.write(
            directory,
            self._preset_config(),
            self._preset_weights(),
            vocab_path=getattr(self, "vocab_path", None),
            do_lower_case=getattr(self, "do_lower_case", None),
            name=getattr(self, "preset_name", None) or self.name,
            source=type(self).__name__,
        )
        return directory

    # ---------------------------------------------------------------- hooks
    @classmethod
    def _from_preset_config(cls, config, **kwargs):
        return cls(config, **kwargs)

    @classmethod
    def _preset_model_arguments(cls):
        return keyword_parameters(cls.__init__, skip=("config",))

    def _load_preset_weights(self, weights, source):
        self.set_canonical_weights(weights, source=source)

    def _preset_weights(self):
        return self.get_canonical_weights()

    def _preset_config(self):
        return self.bert_config
