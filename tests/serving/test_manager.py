"""keras_bert/serving/manager.py: the newest version under a base path is served, a
version dropped in while serving takes over without a restart while requests in flight on the
old one finish, and what cannot be served is named at start."""

import shutil
import time

import numpy as np
import pytest

from keras_bert.serving import ModelConfig, ModelManager, ServerConfigError, ServingError
from tests.export.serving_models import install_version, predict_texts as _predict

WAIT = 60


def _close(outputs, expected):
    np.testing.assert_allclose(outputs["probabilities"], expected["probabilities"], atol=1e-5)
    np.testing.assert_array_equal(outputs["label_ids"], expected["label_ids"])


@pytest.fixture
def managers():
    made = []

    def make(*models, **kwargs):
        kwargs.setdefault("poll_wait_seconds", -1)  # the tests poll by hand unless they say
        made.append(ModelManager(list(models), **kwargs))
        made[-1].start()
        return made[-1]

    yield make
    for manager in made:
        manager.stop()


def test_the_newest_version_is_served_and_answers_as_the_keras_model(
        tmp_path, serving_models, managers):
    base = tmp_path / "sentiment"
    install_version(serving_models["sentiment_v1"][0], base, 1)
    install_version(serving_models["sentiment_v2"][0], base, 2)
    (base / "tmp").mkdir()               # not a version: ignored
    (base / "3").write_text("a file")    # not a directory: ignored
    manager = managers(ModelConfig("sentiment", str(base)))
    with manager.servable("sentiment") as servable:
        assert servable.version == 2
        _close(_predict(servable), serving_models["sentiment_v2"][1])
        assert sorted(servable.signatures) == ["serving_default", "serving_ids"]
    with manager.servable("sentiment", version=2) as servable:
        assert servable.version == 2
    assert [(s.version, s.state) for s in manager.status("sentiment")] == [(2, "AVAILABLE")]


def test_a_version_dropped_in_takes_over_while_requests_in_flight_finish(
        tmp_path, serving_models, managers):
    base = tmp_path / "sentiment"
    install_version(serving_models["sentiment_v1"][0], base, 1)
    manager = managers(ModelConfig("sentiment", str(base)))
    with manager.servable("sentiment") as old:  # a request in flight on version 1
        install_version(serving_models["sentiment_v2"][0], base, 2)
        manager.poll()
        with manager.servable("sentiment") as new:
            assert new.version == 2
            _close(_predict(new), serving_models["sentiment_v2"][1])
        assert old.state == "UNLOADING"
        assert [(s.version, s.state) for s in manager.status("sentiment")] == [
            (2, "AVAILABLE"), (1, "UNLOADING")]
        # The request in flight still runs on the version it started with.
        _close(_predict(old), serving_models["sentiment_v1"][1])
        with pytest.raises(ServingError, match=r"Specific\(sentiment, 1\).* serves version\(s\) "
                                               r"\[2\]") as error:
            manager.resolve("sentiment", version=1)
        assert error.value.code == "NOT_FOUND"
    assert old.wait_unloaded(WAIT) and old.state == "END"
    assert [(s.version, s.state) for s in manager.status("sentiment")] == [
        (2, "AVAILABLE"), (1, "END")]


def test_the_poller_finds_a_new_version_by_itself(tmp_path, serving_models, managers):
    base = tmp_path / "sentiment"
    install_version(serving_models["sentiment_v1"][0], base, 1)
    manager = managers(ModelConfig("sentiment", str(base)), poll_wait_seconds=0.1)
    install_version(serving_models["sentiment_v2"][0], base, 7)
    deadline = time.monotonic() + WAIT
    while manager.resolve("sentiment").version != 7:
        assert time.monotonic() < deadline, "version 7 was never picked up"
        time.sleep(0.05)


def test_a_broken_new_version_leaves_the_old_one_serving_until_it_is_fixed(
        tmp_path, serving_models, managers):
    base = tmp_path / "sentiment"
    install_version(serving_models["sentiment_v1"][0], base, 1)
    manager = managers(ModelConfig("sentiment", str(base)))
    (base / "2").mkdir()
    (base / "2" / "saved_model.pb").write_bytes(b"not a SavedModel")
    manager.poll()
    assert manager.resolve("sentiment").version == 1
    statuses = {s.version: s for s in manager.status("sentiment")}
    assert statuses[1].state == "AVAILABLE"
    assert statuses[2].state == "END" and "DecodeError" in statuses[2].error
    manager.poll()  # unchanged files: not tried again
    shutil.rmtree(base / "2")
    install_version(serving_models["sentiment_v2"][0], base, 2)
    manager.poll()
    assert manager.resolve("sentiment").version == 2
    assert manager.status("sentiment", 2)[0].error == ""


def test_specific_versions_and_labels(tmp_path, serving_models, managers):
    base = tmp_path / "sentiment"
    install_version(serving_models["sentiment_v1"][0], base, 1)
    install_version(serving_models["sentiment_v2"][0], base, 2)
    manager = managers(ModelConfig("sentiment", str(base), ("specific", (1,)),
                                   (("stable", 1),)))
    assert manager.resolve("sentiment").version == 1
    assert manager.resolve("sentiment", label="stable").version == 1
    with pytest.raises(ServingError, match=r"Unrecognized servable version label: 'beta' "
                                           r"\(model 'sentiment' has labels \['stable'\]\)"):
        manager.resolve("sentiment", label="beta")
    with pytest.raises(ServingError, match=r"Specific\(sentiment, 2\)"):
        manager.resolve("sentiment", version=2)


def test_several_models_and_an_unknown_one(tmp_path, serving_models, managers):
    install_version(serving_models["sentiment_v1"][0], tmp_path / "sentiment", 1)
    install_version(serving_models["topics_v1"][0], tmp_path / "topics", 3)
    manager = managers(ModelConfig("sentiment", str(tmp_path / "sentiment")),
                       ModelConfig("topics", str(tmp_path / "topics")))
    with manager.servable("topics") as topics:
        assert topics.version == 3
        _close(_predict(topics), serving_models["topics_v1"][1])
    with pytest.raises(ServingError, match=r"Servable not found for request: Latest\(nope\): "
                                           r"this server serves models \['sentiment', "
                                           r"'topics'\]") as error:
        manager.resolve("nope")
    assert error.value.code == "NOT_FOUND"
    with pytest.raises(ServingError, match=r"Could not find version 9 of model 'topics'"):
        manager.status("topics", 9)


def test_what_cannot_be_served_is_named_at_start(tmp_path, serving_models):
    def start(base, policy=("latest", 1)):
        ModelManager([ModelConfig("m", str(base), policy)], poll_wait_seconds=-1).start()

    with pytest.raises(ServerConfigError, match=r"model 'm': base path .*missing does not "
                                                r"exist"):
        start(tmp_path / "missing")
    (tmp_path / "empty" / "tmp").mkdir(parents=True)
    with pytest.raises(ServerConfigError, match=r"model 'm': no version directory \(a number, "
                                                r"e\.g\. .*empty/1\) under .*empty$"):
        start(tmp_path / "empty")
    shutil.copytree(serving_models["sentiment_v1"][0], tmp_path / "unversioned")
    with pytest.raises(ServerConfigError, match=r"it holds a SavedModel itself: put it in a "
                                                r"version directory"):
        start(tmp_path / "unversioned")
    (tmp_path / "broken" / "1").mkdir(parents=True)
    with pytest.raises(ServerConfigError, match=r"model 'm': version 1 at .*broken/1 does not "
                                                r"load: FileNotFoundError: no saved_model\.pb"):
        start(tmp_path / "broken")
    install_version(serving_models["sentiment_v1"][0], tmp_path / "ones", 1)
    with pytest.raises(ServerConfigError, match=r"none of the versions \[4, 5\] the config asks "
                                                r"for are under .*ones \(found \[1\]\)"):
        start(tmp_path / "ones", ("specific", (4, 5)))
    with pytest.raises(ServerConfigError, match=r"model names must be unique"):
        ModelManager([ModelConfig("m", "/a"), ModelConfig("m", "/b")])


def test_a_base_path_on_an_object_store_is_served(serving_models, managers):
    """--model_base_path=gs://... (ram:// stands for it: the same tf.io.gfile code): versions
    listed and loaded from there, the path kept as given (not made a local ./gs:/ path)."""
    from keras_bert import storage
    from keras_bert.serving.model_config import models_from_flags

    base = "ram://test_manager/models/sentiment"
    storage.rmtree(base)
    for name, version in (("sentiment_v1", 1), ("sentiment_v2", 2)):
        source = serving_models[name][0]
        for relative in storage.walk_files(source):
            storage.copy(f"{source}/{relative}", f"{base}/{version}/{relative}")
    config, = models_from_flags("sentiment", base, None)
    assert config.base_path == base
    manager = managers(config)
    with manager.servable("sentiment") as servable:
        assert servable.version == 2
        _close(_predict(servable), serving_models["sentiment_v2"][1])
    storage.rmtree(base)
