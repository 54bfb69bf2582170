"""`PresetMixin`: what `BertEncoder` holds of the preset it came from, and its thin
``from_preset`` / ``save_to_preset``, which delegate to `keras_bert.presets`: the loader
(`keras_bert.presets.preset_loader.encoder_from_preset`) and the saver
(`keras_bert.presets.preset_saver.PresetSaver`) work through the encoder's public methods
(its constructor, ``set_canonical_weights``, ``get_canonical_weights``). The task models
have their own two methods in `Task`, delegating the same way.

What ``from_preset`` records on the model besides its weights, so that ``save_to_preset``
writes a preset that loads fully (vocabulary and casing included), and what a ``.keras`` round
trip keeps of it:

* ``vocabulary``: the preset's tokens (a list, or None for a preset without one). The model
  does not use it; it is kept for ``save_to_preset`` and, as the text layers keep theirs, it
  is a file asset of a ``.keras`` file (``vocabulary.txt``, ``save_assets``/``load_assets``),
  not part of ``get_config``.
* ``vocab_path``: the file the vocabulary was read from (None after a ``.keras`` load).
  Setting it reads that file into ``vocabulary`` at once (FileNotFoundError if there is
  none); setting None drops the vocabulary.
* ``do_lower_case`` and ``preset_name``: the preset's casing and name, in ``get_config``
  (see `preset_config` and `pop_preset_config`).
* ``fresh_pooler``: set when the checkpoint had no pooler and the pooler was left as
  initialised (the fingerprint of its weights then); ``save_to_preset`` leaves such a pooler
  out while it is unchanged (`keras_bert.presets.preset_saver.encoder_weights`). Not kept by
  a ``.keras`` file.
"""

import os

from keras_bert import storage
from keras_bert import vocab as vocab_lib
from keras_bert.presets.preset_loader import encoder_from_preset
from keras_bert.presets.preset_saver import PresetSaver

# The get_config keys that carry what from_preset records (besides the vocabulary asset).
PRESET_CONFIG_KEYS = ("do_lower_case", "preset_name")


class PresetMixin:
    """Adds ``from_preset`` and ``save_to_preset`` to a model with canonical weights, and
    keeps what ``from_preset`` records on it through a ``.keras`` round trip (see the
    module docstring).

    Example (`BertEncoder` is one):

    >>> import tempfile
    >>> import numpy as np
    >>> from keras_bert import BertEncoder
    >>> encoder = BertEncoder.from_preset("tiny_random")
    >>> path = tempfile.mkdtemp()
    >>> encoder.save_to_preset(path) == path
    True
    >>> again = BertEncoder.from_preset(path, name="again")
    >>> again.name, again.bert_config == encoder.bert_config, again.vocabulary == encoder.vocabulary
    ('again', True, True)
    >>> all(np.array_equal(a, b) for a, b in zip(encoder.get_weights(), again.get_weights()))
    True
    """

    vocabulary = None
    do_lower_case = None
    preset_name = None
    fresh_pooler = None
    _vocab_source = None

    # ---------------------------------------------------------------- preset state
    @property
    def vocab_path(self):
        """The file ``vocabulary`` was read from, or None."""
        return self._vocab_source

    @vocab_path.setter
    def vocab_path(self, path):
        self.vocabulary = None if path is None else vocab_lib.load_vocabulary(path)
        self._vocab_source = None if path is None else os.fspath(path)

    def preset_config(self):
        """The ``get_config`` entries of the preset state (casing and name)."""
        return {key: getattr(self, key) for key in PRESET_CONFIG_KEYS}

    @staticmethod
    def pop_preset_config(config):
        """Removes the preset state from a ``config`` dict (it holds no constructor
        arguments) and returns it, for ``set_preset_config`` once the model is built."""
        return {key: config.pop(key) for key in PRESET_CONFIG_KEYS if key in config}

    def set_preset_config(self, state):
        for key, value in state.items():
            setattr(self, key, value)

    def save_assets(self, dir_path):
        """Writes the vocabulary (if any) to ``dir_path``/vocabulary.txt; Keras calls it
        when saving a ``.keras`` file."""
        if self.vocabulary is not None:
            vocab_lib.write_vocabulary(list(self.vocabulary),
                                       os.path.join(dir_path, vocab_lib.ASSET_FILE))

    def load_assets(self, dir_path):
        """Reads the vocabulary ``save_assets`` wrote, if there is one."""
        path = os.path.join(dir_path, vocab_lib.ASSET_FILE) if dir_path else None
        if path and storage.isfile(path):
            self.vocabulary = vocab_lib.load_vocabulary(path)

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Builds the model from a preset and loads its weights.

        Args:
            preset: a registered name (``keras_bert.presets()`` lists them), a local
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
        return encoder_from_preset(cls, preset, load_weights=load_weights, **kwargs)

    def save_to_preset(self, directory, format="keras_bert"):
        """Writes config, vocabulary (``self.vocabulary``, if any) and weights in ``format``;
        returns ``directory``.

        keras_bert's layout (`keras_bert.checkpoints.keras_bert_layout`, the default) is a
        Google checkpoint directory plus ``keras_bert.json``; ``format="google"`` writes
        Google's files alone, ``format="huggingface"`` a ``BertModel`` directory that
        transformers reads (``config.json``, ``model.safetensors``, the tokenizer files).
        ``from_preset(directory)`` loads each back. A model
        from ``from_preset``, or loaded from a ``.keras`` file of one, writes the preset's
        vocabulary and casing; one built from a config alone writes none. An earlier preset
        in ``directory`` is replaced at once (`keras_bert.presets.preset_saver`): a reader
        finds the old one or the new one, never a mix.
        """
        return PresetSaver(directory, format).save_encoder(self)
