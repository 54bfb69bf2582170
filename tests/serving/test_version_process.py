"""keras_bert/serving/version_process.py through the manager: each SavedModel version loads,
warms up (tests/serving/test_warmup.py) and runs in a process of its own; the old version
answers while the new one loads and warms up; a retired version's process ends (its memory
with it); a version whose process died answers UNAVAILABLE and is loaded again at the next
poll."""

import os
import shutil
import signal
import threading
import time

import numpy as np
import pytest

from keras_bert.export import warmup_requests
from keras_bert.serving import ModelConfig, ModelManager, ServingError
from tests.export.serving_models import SENTENCES, install_version, predict_texts as _predict

WAIT = 60


def _with_records(source, target, records):
    shutil.copytree(source, target)
    warmup_requests.write(str(target), records)
    return target


@pytest.fixture
def managers():
    made = []

    def make(*models, **kwargs):
        kwargs.setdefault("poll_wait_seconds", -1)
        made.append(ModelManager(list(models), **kwargs))
        made[-1].start()
        return made[-1]

    yield make
    for manager in made:
        manager.stop()


def _gone(pid):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_version_runs_in_its_own_process_that_ends_when_it_is_retired(
        tmp_path, serving_models, managers):
    base = tmp_path / "sentiment"
    install_version(serving_models["sentiment_v1"][0], base, 1)
    manager = managers(ModelConfig("sentiment", str(base)))
    with manager.servable("sentiment") as servable:
        pid = servable._loaded.pid
        assert pid != os.getpid()
        assert servable.warmed_up == "one call per signature"  # no warm-up file: ours
        np.testing.assert_allclose(_predict(servable)["probabilities"],
                                   serving_models["sentiment_v1"][1]["probabilities"],
                                   atol=1e-5)
    install_version(serving_models["sentiment_v2"][0], base, 2)
    manager.poll()
    assert manager.resolve("sentiment").version == 2
    assert servable.wait_unloaded(WAIT) and servable.state == "END"
    assert _gone(pid), "the retired version's process is still running"


def _spec():
    import tensorflow as tf

    return tf.TensorSpec([None], tf.string)


def test_the_old_version_answers_while_the_new_one_loads_and_warms_up(
        tmp_path, serving_models, managers):
    """The swap serves throughout: while version 2 is LOADING (its warm-up replayed many
    times, so that it takes a while), version 1 answers; then version 2 takes over."""
    base = tmp_path / "sentiment"
    install_version(serving_models["sentiment_v1"][0], base, 1)
    manager = managers(ModelConfig("sentiment", str(base)),
                       num_request_iterations_for_warmup=400)
    records = warmup_requests.text_records({"text": _spec()}, SENTENCES)
    staging = _with_records(serving_models["sentiment_v2"][0], tmp_path / "incoming", records)
    staging.rename(base / "2")
    polling = threading.Thread(target=manager.poll)
    polling.start()
    answered_while_loading, failures = 0, []
    while polling.is_alive():
        states = {s.version: s.state for s in manager.status("sentiment")}
        try:
            with manager.servable("sentiment") as servable:
                _predict(servable, SENTENCES[:2])
                version = servable.version
        except ServingError as error:
            failures.append(error)
            continue
        if states.get(2) == "LOADING" and version == 1:
            answered_while_loading += 1
    polling.join()
    assert failures == []
    assert answered_while_loading > 0
    assert manager.resolve("sentiment").version == 2


def test_a_version_whose_process_died_is_unavailable_then_loaded_again(
        tmp_path, serving_models, managers):
    base = tmp_path / "sentiment"
    install_version(serving_models["sentiment_v1"][0], base, 1)
    manager = managers(ModelConfig("sentiment", str(base)))
    servable = manager.resolve("sentiment")
    os.kill(servable._loaded.pid, signal.SIGKILL)
    assert _gone(servable._loaded.pid)
    deadline = time.monotonic() + WAIT
    while servable._loaded.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(ServingError, match=r"the process serving model 'sentiment' version 1 "
                                           r"has exited \(exit code -9\)") as error:
        _predict(servable)
    assert error.value.code == "UNAVAILABLE"
    manager.poll()
    again = manager.resolve("sentiment")
    assert again is not servable and again.version == 1
    np.testing.assert_allclose(_predict(again)["probabilities"],
                               serving_models["sentiment_v1"][1]["probabilities"], atol=1e-5)


# In a process of its own (its allocator settings stay there): 256 MiB in blocks of 1 MiB from
# the heap, freed without the heap shrinking on its own (glibc's M_MMAP_THRESHOLD and
# M_TRIM_THRESHOLD raised: TensorFlow's loads leave such free heap behind), then trimmed.
TRIM = """
import ctypes, json, psutil
from keras_bert.serving.version_process import release_free_memory
rss = lambda: psutil.Process().memory_info().rss
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
assert libc.mallopt(-3, 4 << 20) == 1 and libc.mallopt(-1, 1 << 30) == 1
blocks = [libc.malloc(1 << 20) for _ in range(256)]
for block in blocks:
    ctypes.memset(block, 1, 1 << 20)
for block in blocks:
    libc.free(block)
freed = rss()
print(json.dumps([release_free_memory(), freed, rss()]))
"""


def test_the_heap_left_free_by_loading_goes_back_to_the_system():
    import json
    import platform
    import subprocess
    import sys

    from keras_bert.serving.version_process import release_free_memory

    if platform.libc_ver()[0] != "glibc":
        assert release_free_memory() is False  # another C library's allocator decides
        return
    result = subprocess.run([sys.executable, "-c", TRIM], capture_output=True, text=True,
                            timeout=120, cwd=os.path.dirname(os.path.dirname(
                                os.path.dirname(os.path.abspath(__file__)))))
    assert result.returncode == 0, result.stderr[-3000:]
    trimmed, freed, after = json.loads(result.stdout.splitlines()[-1])
    assert trimmed is True
    assert freed - after > 192 << 20, (freed, after)  # most of the 256 MiB given back


def test_the_first_call_of_each_signature_gives_back_its_free_heap(monkeypatch):
    # A signature the warm-up did not call (a warm-up file names only some) optimises its
    # graph at its first call, which leaves copies of a frozen graph's constants freed.
    import multiprocessing

    import tensorflow as tf

    from keras_bert.serving import version_process

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def double(x):
        return {"y": 2 * x}

    functions = {"a": double.get_concrete_function(), "b": double.get_concrete_function()}
    specs = {k: {"x": tf.TensorSpec([None], tf.float32, name="x")} for k in functions}
    trims = []
    monkeypatch.setattr(version_process, "release_free_memory", lambda: trims.append(1))
    ours, theirs = multiprocessing.Pipe()
    worker = threading.Thread(target=version_process._serve_calls,
                              args=(theirs, functions, specs, 1))
    worker.start()
    replies = []
    for call_id, name in enumerate(["a", "a", "b", "a", "b"]):
        ours.send(("call", call_id, name, {"x": np.array([call_id], np.float32)}))
        replies.append(ours.recv())
    ours.send(("stop",))
    worker.join(timeout=60)
    assert [r[0] for r in replies] == ["ok"] * 5, replies
    np.testing.assert_array_equal(replies[2][2]["y"], [4.0])
    assert len(trims) == 2  # once for "a", once for "b"
