"""What a `.keras` archive holds: its config and its vocabulary assets."""

import json
import zipfile

import keras


def round_trip(obj, path):
    """Saves `obj` (a layer or model) to the `.keras` file `path` and loads it back."""
    keras.saving.save_model(obj, path)
    return keras.saving.load_model(path)


def vocabulary_assets(path):
    """{asset path: tokens} of every `vocabulary.txt` in the `.keras` file `path`."""
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name).decode("utf-8").split("\n")[:-1]
                for name in archive.namelist()
                if name.startswith("assets/") and name.endswith("/vocabulary.txt")
                or name == "assets/vocabulary.txt"}


def assert_vocabulary_is_an_asset(path, tokens):
    """The archive's config.json holds no token list (and no "vocabulary" entry), and its
    assets hold `tokens` as vocabulary.txt; returns the assets' paths."""
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
    tokens = list(tokens)

    def walk(node, where):
        if isinstance(node, dict):
            assert "vocabulary" not in node, f"config.json has a vocabulary at {where}"
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            assert node != tokens, f"config.json holds the token list at {where}"
            for i, value in enumerate(node):
                walk(value, f"{where}[{i}]")

    walk(config, "")
    assets = vocabulary_assets(path)
    assert assets, f"{path} has no vocabulary.txt asset"
    for name, saved in assets.items():
        assert saved == tokens, name
    return sorted(assets)
