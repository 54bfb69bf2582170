"""models/load_note.py: keras.saving.load_model of a keras_bert model in a program that has
not imported keras_bert fails with a message that says to import it (Keras imports no module
outside its own packages); after the import the same file loads."""

import json
import zipfile

from keras_bert import BertClassifier, BertPreprocessor
from tests.isolated import run_python
from tests.models.tiny import VOCAB, tiny_encoder

FRESH = """
import sys
import keras

path = PATH
try:
    keras.saving.load_model(path)
except TypeError as error:
    message = str(error)
assert "keras_bert" not in sys.modules
print("FIRST 500:", message[:500].replace("\\n", " "))
import keras_bert
model = keras.saving.load_model(path)
print("LOADED:", type(model).__name__, model.predict(["a great movie"], verbose=0).shape)
"""


def test_load_model_without_keras_bert_says_to_import_it(tmp_path):
    model = BertClassifier(tiny_encoder(), 2, preprocessor=BertPreprocessor(VOCAB, seq_length=8))
    path = tmp_path / "model.keras"
    model.save(path, include_optimizer=False)
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))["config"]
    assert list(config)[0] == "load_note"  # first, so that Keras' message shows it early
    encoder_config = config["encoder"]["config"]
    assert list(encoder_config)[0] == "load_note"  # a saved encoder's too
    assert "load_note" not in model.head_config()  # presets record the arguments alone

    result = run_python(FRESH.replace("PATH", repr(str(path))))
    assert result.returncode == 0, result.stderr[-3000:]
    first = result.stdout.split("FIRST 500:")[1].split("\n")[0]
    assert "Could not locate class 'BertClassifier'" in first
    assert "import keras_bert first" in first
    assert "LOADED: BertClassifier (1, 2)" in result.stdout
