"""Other names of the registered presets (keras-hub names, TF Hub and Kaggle handles of
Google's BERTs, Google's checkpoint names) and did-you-mean suggestions."""

import pytest

from keras_bert import BertEncoder
from keras_bert.presets import PRESETS, UnknownPresetError, load_preset
from keras_bert.presets.aliases import (
    KERAS_HUB_NAMES, UnregisteredBertError, registry_name, suggestions,
)

MAPPED = {
    # keras-hub's preset names
    "bert_tiny_en_uncased": "tiny",
    "bert_small_en_uncased": "small",
    "bert_medium_en_uncased": "medium",
    "bert_base_en_uncased": "base",
    "bert_base_en": "base_cased",
    "bert_large_en_uncased": "large",
    "bert_large_en": "large_cased",
    "bert_base_multi": "base_multilingual",
    "bert_base_zh": "base_chinese",
    # TF Hub
    "https://tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/4": "base",
    "https://tfhub.dev/tensorflow/bert_en_cased_L-12_H-768_A-12/4": "base_cased",
    "https://tfhub.dev/tensorflow/bert_en_uncased_L-24_H-1024_A-16/4": "large",
    "https://tfhub.dev/tensorflow/bert_en_cased_L-24_H-1024_A-16/4": "large_cased",
    "https://tfhub.dev/tensorflow/bert_en_wwm_uncased_L-24_H-1024_A-16/4": "large_wwm",
    "https://tfhub.dev/tensorflow/bert_en_wwm_cased_L-24_H-1024_A-16/4": "large_wwm_cased",
    "https://tfhub.dev/tensorflow/bert_multi_cased_L-12_H-768_A-12/4": "base_multilingual",
    "https://tfhub.dev/tensorflow/bert_zh_L-12_H-768_A-12/4": "base_chinese",
    "https://tfhub.dev/tensorflow/small_bert/bert_en_uncased_L-2_H-128_A-2/2": "tiny",
    "https://tfhub.dev/tensorflow/small_bert/bert_en_uncased_L-4_H-256_A-4/2": "mini",
    "https://tfhub.dev/tensorflow/small_bert/bert_en_uncased_L-4_H-512_A-8/2": "small",
    "https://tfhub.dev/tensorflow/small_bert/bert_en_uncased_L-8_H-512_A-8/2": "medium",
    "tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12": "base",
    # TF Hub's BERTs on Kaggle: the page's two forms and the handle
    "https://www.kaggle.com/models/tensorflow/bert/tensorFlow2/en-uncased-l-12-h-768-a-12/4":
        "base",
    "https://www.kaggle.com/models/tensorflow/bert/frameworks/tensorFlow2/variations/"
    "en-wwm-cased-l-24-h-1024-a-16/versions/4": "large_wwm_cased",
    "kaggle://tensorflow/bert/tensorFlow2/en-uncased-l-4-h-256-a-4/2": "mini",
    "kaggle://tensorflow/bert/tensorFlow2/multi-cased-l-12-h-768-a-12": "base_multilingual",
    # Google's own checkpoint names
    "uncased_L-12_H-768_A-12": "base",
    "wwm_cased_L-24_H-1024_A-16": "large_wwm_cased",
    "chinese_L-12_H-768_A-12": "base_chinese",
    "multilingual_L-12_H-768_A-12": "base_multilingual_uncased",
    "uncased_L-10_H-512_A-8": "bert_L10_H512",
    # the small BERTs by the Hugging Face Hub's ids, TF Hub, Kaggle and bert_L<n>_H<n>
    "google/bert_uncased_L-4_H-256_A-4": "mini",
    "google/bert_uncased_L-6_H-256_A-4": "bert_L6_H256",
    "google/bert_uncased_L-12_H-768_A-12": "bert_L12_H768",  # 2020's, not base
    "https://tfhub.dev/tensorflow/small_bert/bert_en_uncased_L-12_H-768_A-12/2": "bert_L12_H768",
    "https://tfhub.dev/tensorflow/small_bert/bert_en_uncased_L-6_H-256_A-4/2": "bert_L6_H256",
    "kaggle://tensorflow/bert/tensorFlow2/bert-en-uncased-l-6-h-256-a-4/2": "bert_L6_H256",
    "bert_L2_H128": "tiny",
    "bert_L8_H512": "medium",
    # the Hugging Face Hub's ids of Google's other checkpoints
    "bert-base-uncased": "base",
    "google-bert/bert-large-cased-whole-word-masking": "large_wwm_cased",
    "bert-base-multilingual-uncased": "base_multilingual_uncased",
    "google-bert/bert-base-chinese": "base_chinese",
}


@pytest.mark.parametrize("name", sorted(MAPPED))
def test_other_names_map_to_the_registered_preset(name):
    assert registry_name(name) == MAPPED[name]


def test_every_keras_hub_name_maps_to_the_same_architecture():
    sizes = {"tiny": (2, 128), "small": (4, 512), "medium": (8, 512), "base": (12, 768),
             "large": (24, 1024)}
    for hub_name, preset in KERAS_HUB_NAMES.items():
        spec = PRESETS[preset]
        size = hub_name.split("_")[1]
        assert (spec.num_hidden_layers, spec.hidden_size) == sizes[size], hub_name
        cased = not hub_name.endswith("_uncased") and not hub_name.endswith("_zh")
        assert spec.casing == ("cased" if cased else "uncased"), hub_name


def test_a_keras_hub_name_loads_the_registered_preset_without_a_download(cache):
    encoder = BertEncoder.from_preset("bert_tiny_en_uncased", load_weights=False)
    assert encoder.preset_name == "tiny" and encoder.bert_config.num_hidden_layers == 2
    assert load_preset("https://tfhub.dev/tensorflow/bert_en_cased_L-12_H-768_A-12/4",
                       require_weights=False).name == "base_cased"


def test_a_directory_of_such_a_name_is_read_as_a_directory(tmp_path, monkeypatch, cache):
    from google_zips import write_google_dir  # tests/presets/google_zips.py

    write_google_dir(tmp_path / "uncased_L-12_H-768_A-12")  # an unzipped archive, here tiny
    monkeypatch.chdir(tmp_path)
    preset = load_preset("uncased_L-12_H-768_A-12")
    assert preset.format == "google" and preset.config.hidden_size == 8
    assert not cache.exists()  # nothing downloaded


def test_kaggle_handles_of_other_models_are_no_aliases():
    assert registry_name("kaggle://keras/bert/keras/bert_base_en_uncased/3") is None
    assert registry_name("base_model") is None


@pytest.mark.parametrize("layers", [2, 4, 6, 8, 10, 12])
@pytest.mark.parametrize("hidden", [128, 256, 512, 768])
def test_every_small_bert_is_reached_by_each_of_its_names(layers, hidden):
    heads = hidden // 64
    name = registry_name(f"google/bert_uncased_L-{layers}_H-{hidden}_A-{heads}")
    spec = PRESETS[name]
    assert spec.url.endswith(f"/2020_02_20/uncased_L-{layers}_H-{hidden}_A-{heads}.zip")
    assert registry_name(f"bert_L{layers}_H{hidden}") == name
    assert registry_name("https://tfhub.dev/tensorflow/small_bert/bert_en_uncased_"
                         f"L-{layers}_H-{hidden}_A-{heads}/2") == name
    google = registry_name(f"uncased_L-{layers}_H-{hidden}_A-{heads}")
    assert google == ("base" if (layers, hidden) == (12, 768) else name)


def test_an_hf_handle_of_a_google_checkpoint_still_goes_to_the_hub():
    assert registry_name("hf://google/bert_uncased_L-4_H-256_A-4") is None
    assert registry_name("google/bert_uncased_L-4_H-256_A-5") is None  # no such model


def test_a_hub_id_loads_the_registered_preset_without_a_download(cache):
    preset = load_preset("google/bert_uncased_L-6_H-256_A-4", require_weights=False)
    assert preset.name == "bert_L6_H256" and preset.config.num_hidden_layers == 6
    assert not cache.exists()


def test_an_unregistered_google_bert_is_said_to_be_none_of_googles():
    with pytest.raises(UnregisteredBertError, match=(
            r"bert_en_cased_L-4_H-256_A-4/2 is Google's cased_L-4_H-256_A-4, which is not a "
            r"registered preset \(Google released no such model that keras_bert knows of\)\. "
            r"Registered of that kind: base_cased, large_cased")):
        load_preset("https://tfhub.dev/tensorflow/small_bert/bert_en_cased_L-4_H-256_A-4/2")


def test_a_tfhub_preprocessing_model_is_refused_clearly():
    with pytest.raises(Exception, match="not a TF Hub BERT encoder"):
        load_preset("https://tfhub.dev/tensorflow/bert_en_uncased_preprocess/3")


@pytest.mark.parametrize("name, first", [
    ("bert_base_uncased", ["base"]),            # Hugging Face's name: uncased, base size
    ("bert-base-uncased", ["base"]),
    ("base_uncased", ["base"]),
    ("bert_large_uncased", ["large", "large_wwm"]),
    ("bert_large_cased", ["large_cased", "large_wwm_cased"]),
    ("bert-base-multilingual-cased", ["base_multilingual"]),
    ("bert_base_chinese", ["base_chinese"]),
    ("bert-large-uncased-whole-word-masking", ["large_wwm"]),
    ("bert_base_en_uncasd", ["base"]),           # a keras-hub name misspelt
    ("bsae", ["base"]),                          # no features: by spelling
])
def test_suggestions_respect_casing_and_size(name, first):
    got = suggestions(name)
    assert got[:len(first)] == first, got
    casing = "uncased" if "uncased" in name else "cased" if "cased" in name else None
    if casing and "uncasd" not in name:
        assert all(PRESETS[g].casing == casing for g in got), got


def test_the_unknown_preset_error_suggests_the_uncased_model():
    with pytest.raises(UnknownPresetError, match=r"Did you mean 'base'\?"):
        load_preset("bert_base_uncased")
