"""The note that opens the config of keras_bert's models: how to load their ``.keras`` files.

Keras imports the module a saved class names only for its own packages (``keras``,
``keras_hub``, ``keras_cv``, ``keras_nlp``); it never imports other modules a file names, a
safety rule. So ``keras.saving.load_model`` of a keras_bert model in a program that has not
imported keras_bert cannot find ``BertClassifier`` and says "Could not locate class
'BertClassifier'", followed by the saved config. That config opens with this note, so the
message names the fix within its first lines; ``from_config`` drops it.

>>> from keras_bert.models import load_note
>>> config = load_note.add({"num_classes": 2})
>>> next(iter(config.items()))
('load_note', 'import keras_bert first: keras.saving.load_model finds keras_bert classes only after it')
>>> load_note.drop(config)
{'num_classes': 2}
"""

KEY = "load_note"
NOTE = ("import keras_bert first: keras.saving.load_model finds keras_bert classes only "
        "after it")


def add(config):
    """``config`` (a `get_config`) with the note as its first entry."""
    return {KEY: NOTE, **config}


def drop(config):
    """A copy of ``config`` without the note (configs written without it pass unchanged)."""
    return {k: v for k, v in config.items() if k != KEY}
