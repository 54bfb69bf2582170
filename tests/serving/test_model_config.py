"""keras_bert/serving/model_config.py: model config files and batching parameters files, read
as tensorflow_model_server reads them, with errors naming the file and line."""

import os

import pytest

from keras_bert.serving import (
    BatchingOptions,
    ModelConfig,
    ServerConfigError,
    models_from_flags,
    read_batching_parameters_file,
    read_model_config_file,
)

CONFIG = """
model_config_list {
  config {
    name: "sentiment"
    base_path: "/models/sentiment"
    model_platform: "tensorflow"
  }
  config {
    name: 'topics'
    base_path: 'relative/topics'
    model_version_policy { specific { versions: 3 versions: 1 } }
    version_labels { key: "stable" value: 1 }
    version_labels { key: "canary" value: 3 }
  }
  config { name: "all" base_path: "/m/all" model_version_policy { all {} } }
  config { name: "two" base_path: "/m/two" model_version_policy { latest { num_versions: 2 } } }
}
"""


def _write(tmp_path, text, name="models.config"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_model_config_file_lists_every_model_with_its_policy(tmp_path):
    models = read_model_config_file(_write(tmp_path, CONFIG))
    assert [m.name for m in models] == ["sentiment", "topics", "all", "two"]
    sentiment, topics, every, two = models
    assert sentiment == ModelConfig("sentiment", "/models/sentiment", ("latest", 1))
    assert topics.base_path == os.path.abspath("relative/topics")  # as TF Serving: the cwd
    assert topics.version_policy == ("specific", (1, 3))
    assert topics.labels() == {"stable": 1, "canary": 3}
    assert every.version_policy == ("all",)
    assert two.version_policy == ("latest", 2)


@pytest.mark.parametrize("text,match", [
    ("model_config_list {\n  config {\n    name: 'a'\n    bogus: 1\n  }\n}\n",
     r"models\.config:4:5: not a valid ModelServerConfig text proto: .*no field named "
     r"\"bogus\""),
    ("model_config_list {\n  config { name: 'a' base_path: '/x' }\n",
     r"models\.config:2:\d+: .*Expected \"}\""),
    ("model_config_list {\n config { name: 'a' base_path: /x }\n}",
     r"models\.config:2:\d+: .*"),
])
def test_a_syntax_error_names_the_file_and_line(tmp_path, text, match):
    with pytest.raises(ServerConfigError, match=match):
        read_model_config_file(_write(tmp_path, text))


@pytest.mark.parametrize("text,match", [
    ("", r"model_config_list has no `config \{ \.\.\. \}` entry"),
    ("model_config_list { config { base_path: '/x' } }", r"config\[0\] has no name"),
    ("model_config_list { config { name: 'a' } }", r"config\[0\] \('a'\) has no base_path"),
    ("model_config_list { config { name: 'a' base_path: '/x' } "
     "config { name: 'a' base_path: '/y' } }", r"config\[1\] \('a'\): a second model named"),
    ("model_config_list { config { name: 'a' base_path: '/x' model_platform: 'pytorch' } }",
     r"model_platform 'pytorch' is not supported"),
    ("model_config_list { config { name: 'a' base_path: '/x' "
     "model_version_policy { specific { } } } }", r"specific lists no versions"),
    ("custom_model_config { }", r"custom_model_config is not supported"),
])
def test_a_config_that_parses_but_cannot_serve_names_the_model(tmp_path, text, match):
    with pytest.raises(ServerConfigError, match=r"models\.config: .*" + match):
        read_model_config_file(_write(tmp_path, text))


def test_an_unreadable_config_file_is_named(tmp_path):
    with pytest.raises(ServerConfigError, match=r"--model_config_file: .*nope\.config does not "
                                                r"exist"):
        read_model_config_file(str(tmp_path / "nope.config"))
    with pytest.raises(ServerConfigError, match=r"is a directory"):
        read_model_config_file(str(tmp_path))
    path = tmp_path / "latin1.config"
    path.write_bytes(b"model_config_list {\n # caf\xe9\n}")
    with pytest.raises(ServerConfigError, match=r"latin1\.config:2: not UTF-8 text"):
        read_model_config_file(str(path))


def test_models_from_the_command_line_flags(tmp_path):
    assert models_from_flags("m", "rel/base", None) == [
        ModelConfig("m", os.path.abspath("rel/base"))]
    config = _write(tmp_path, CONFIG)
    assert len(models_from_flags("default", None, config)) == 4
    with pytest.raises(ServerConfigError, match=r"--model_config_file or --model_base_path, not "
                                                r"both"):
        models_from_flags("m", "/x", config)
    with pytest.raises(ServerConfigError, match=r"give --model_base_path .* there is no model"):
        models_from_flags("m", None, None)


def test_batching_parameters_file_as_tf_serving_writes_it(tmp_path):
    path = _write(tmp_path, "max_batch_size { value: 32 }\nbatch_timeout_micros { value: 2000 }"
                            "\nmax_enqueued_batches { value: 100 }\nnum_batch_threads { value: 2 }"
                            "\nthread_pool_name { value: 'pool' }\n"
                            "allowed_batch_sizes: 8\nallowed_batch_sizes: 32\n", "batching.txt")
    options = read_batching_parameters_file(path)
    assert options == BatchingOptions(max_batch_size=32, batch_timeout_micros=2000,
                                      max_enqueued_batches=100, num_batch_threads=2,
                                      allowed_batch_sizes=(8, 32))
    # Fields left out keep TF Serving's defaults.
    assert read_batching_parameters_file(_write(tmp_path, "", "empty.txt")) == BatchingOptions()


@pytest.mark.parametrize("text,match", [
    ("max_batch_size { value: 32 }\nmax_batch_sise { value: 3 }",
     r"batching\.txt:2:1: not a valid BatchingParameters text proto: .*max_batch_sise"),
    ("max_batch_size: 32", r"batching\.txt:1:\d+: "),
    ("max_batch_size { value: 0 }", r"batching\.txt: max_batch_size must be an integer >= 1"),
    ("max_batch_size { value: 16 } allowed_batch_sizes: 4 allowed_batch_sizes: 8",
     r"allowed_batch_sizes must end with max_batch_size=16"),
    ("pad_variable_length_inputs: true", r"pad_variable_length_inputs is not supported"),
])
def test_bad_batching_parameters_are_named(tmp_path, text, match):
    with pytest.raises(ServerConfigError, match=match):
        read_batching_parameters_file(_write(tmp_path, text, "batching.txt"))
