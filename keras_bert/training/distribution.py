"""The tf.distribute strategy of a training run, from the flags users know.

``strategy_from_flags(strategy, tpu, num_gpus)`` returns one of TensorFlow's strategies, never
a home-made one:

* ``tpu``: `tf.distribute.TPUStrategy` on ``tpu`` (a Cloud TPU name, ``"local"``, or a gRPC
  address ``grpc://host:8470``) through `tf.distribute.cluster_resolver.TPUClusterResolver`.
  Connecting to an address where no gRPC server answers makes TensorFlow wait forever, so an
  address is first probed (`PROBE_TIMEOUT` seconds: a TCP connection, then the HTTP/2
  handshake gRPC speaks) and the connection runs in a daemon thread that is given
  `CONNECT_TIMEOUT` seconds: an unreachable TPU is a `StrategyError` within seconds, naming
  it.
* ``multi_worker_mirrored``: `tf.distribute.MultiWorkerMirroredStrategy` over the cluster
  that ``TF_CONFIG`` describes (checked first by `check_tf_config`, which names what is
  wrong in it). Every worker runs the same command with its own ``TF_CONFIG``.
* ``mirrored``: `tf.distribute.MirroredStrategy` over ``num_gpus`` GPUs, or, without GPUs,
  over every logical CPU device (`split_cpu` makes several for tests of data parallelism).
* ``one_device``: `tf.distribute.OneDeviceStrategy` on the first GPU or the CPU.
* ``default`` picks for you: ``tpu`` when ``tpu`` is given, ``multi_worker_mirrored`` when
  ``TF_CONFIG`` names more than one task, ``mirrored`` for ``num_gpus > 1``, otherwise
  TensorFlow's default (no-op) strategy.

`worker_role(strategy)` tells a worker whether it is the chief (the one whose checkpoints and
logs are the run's).
"""

import json
import os
import socket
import threading
import urllib.parse

import tensorflow as tf

STRATEGIES = ("default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")
PROBE_TIMEOUT = 3.0  # seconds a TCP connection to a TPU address may take
CONNECT_TIMEOUT = 60.0  # seconds connecting to a reachable TPU and initialising it may take
TASK_TYPES = ("chief", "worker", "ps", "evaluator")


class StrategyError(ValueError):
    """A strategy that cannot be made: bad flags, a bad TF_CONFIG, an unreachable TPU.

    >>> try:
    ...     check_tf_config("{not json")
    ... except StrategyError as error:
    ...     print(error)
    TF_CONFIG is not valid JSON (...): '{not json'
    """


def split_cpu(num_devices):
    """Splits the physical CPU into ``num_devices`` logical devices (``/cpu:0``...), so that
    `tf.distribute.MirroredStrategy` has several replicas on a machine without accelerators.

    Must run before TensorFlow makes its first op (the devices are fixed then); raises
    `StrategyError` saying so otherwise."""
    if num_devices <= 1:
        return
    cpus = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * num_devices)
    except RuntimeError as error:
        current = len(tf.config.list_logical_devices("CPU"))
        if current == num_devices:
            return
        raise StrategyError(
            f"Cannot split the CPU into {num_devices} logical devices: TensorFlow has already "
            f"made its devices ({current} CPU device(s)). Split it before any TensorFlow op "
            f"runs. ({error})") from None


def check_tf_config(text=None):
    """Parses and checks ``TF_CONFIG`` (the environment variable when ``text`` is None).

    Returns the dict, or None when it is unset or empty. Raises `StrategyError` naming the
    problem: not JSON, no ``cluster``, a task list that is not a list of ``"host:port"``
    strings, a port that is not a number, a ``task`` whose type the cluster lacks or whose
    index is out of range.

    Example:

    >>> config = check_tf_config('{"cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]},'
    ...                          ' "task": {"type": "worker", "index": 1}}')
    >>> config["task"]
    {'type': 'worker', 'index': 1}
    >>> check_tf_config('{"cluster": {"worker": ["127.0.0.1"]}, "task": {"type": "worker"}}')
    Traceback (most recent call last):
    ...
    keras_bert.training.distribution.StrategyError: TF_CONFIG: cluster["worker"][0] is ...
    """
    if text is None:
        text = os.environ.get("TF_CONFIG", "")
    if not text.strip():
        return None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise StrategyError(f"TF_CONFIG is not valid JSON ({error}): {text[:200]!r}") from None
    if not isinstance(config, dict):
        raise StrategyError(f"TF_CONFIG must be a JSON object, got a {type(config).__name__}")
    cluster = config.get("cluster")
    if not isinstance(cluster, dict) or not cluster:
        raise StrategyError('TF_CONFIG has no "cluster" object, e.g. {"cluster": {"worker": '
                            '["host1:2222", "host2:2222"]}, "task": {"type": "worker", '
                            '"index": 0}}')
    for task_type, addresses in cluster.items():
        if task_type not in TASK_TYPES:
            raise StrategyError(f'TF_CONFIG: unknown task type "{task_type}" in cluster '
                                f"(known: {', '.join(TASK_TYPES)})")
        if not isinstance(addresses, list) or not addresses:
            raise StrategyError(f'TF_CONFIG: cluster["{task_type}"] must be a non-empty list '
                                f'of "host:port" strings, got {addresses!r}')
        for i, address in enumerate(addresses):
            host, _, port = str(address).rpartition(":") if isinstance(address, str) else ("",
                                                                                        "", "")
            if not host or not port:
                raise StrategyError(f'TF_CONFIG: cluster["{task_type}"][{i}] is {address!r}; '
                                    'each task must be "host:port"')
            if not port.isdigit() or not 0 < int(port) < 65536:
                raise StrategyError(f'TF_CONFIG: cluster["{task_type}"][{i}] = {address!r} has '
                                    f"port {port!r}, not a number in 1..65535")
    task = config.get("task")
    if not isinstance(task, dict):
        raise StrategyError('TF_CONFIG has no "task" object saying which task this process '
                            'is, e.g. "task": {"type": "worker", "index": 0}')
    task_type, index = task.get("type"), task.get("index", 0)
    if task_type not in cluster:
        raise StrategyError(f'TF_CONFIG: task type {task_type!r} is not in the cluster '
                            f"(it has {', '.join(sorted(cluster))})")
    if isinstance(index, bool) or not isinstance(index, int) or not (
            0 <= index < len(cluster[task_type])):
        raise StrategyError(f'TF_CONFIG: task index {index!r} is out of range: cluster'
                            f'["{task_type}"] has {len(cluster[task_type])} task(s)')
    config["task"] = {**task, "index": index}
    return config


def _num_tasks(config):
    return sum(len(v) for k, v in config["cluster"].items() if k in ("chief", "worker"))


def _tpu_address(tpu):
    """(host, port) of a TPU given as an address (``grpc://host:port`` or ``host:port``), or
    None for a name TensorFlow resolves itself (a Cloud TPU name, ``"local"``)."""
    parsed = urllib.parse.urlsplit(tpu if "://" in tpu else f"grpc://{tpu}")
    if parsed.scheme != "grpc" or ":" not in parsed.netloc:
        return None
    try:
        return parsed.hostname, parsed.port
    except ValueError:
        raise StrategyError(f"--tpu={tpu}: not a valid address (grpc://host:port)") from None


# HTTP/2's client connection preface and an empty SETTINGS frame: a gRPC server answers
# with a SETTINGS frame of its own (frame type 4).
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _probe(tpu, host, port, timeout):
    """Checks that a gRPC server answers at host:port within ``timeout`` seconds: TCP
    connect, then the HTTP/2 handshake. TensorFlow's own connect waits forever, holding
    the interpreter, when nothing or something else answers there."""
    hint = ("Check the TPU's address and that it is running, and that this machine can "
            "reach it.")
    try:
        connection = socket.create_connection((host, port), timeout=timeout)
    except OSError as error:
        raise StrategyError(
            f"--tpu={tpu}: nothing answers at {host}:{port} ({error.strerror or error}; waited "
            f"at most {timeout:g} s). {hint}") from None
    with connection:
        try:
            connection.sendall(_HTTP2_PREFACE)
            reply = connection.recv(9)
        except OSError as error:
            reply = b""
            detail = error.strerror or str(error) or type(error).__name__
        else:
            detail = "no HTTP/2 SETTINGS frame in reply"
    if len(reply) < 4 or reply[3] != 4:
        raise StrategyError(
            f"--tpu={tpu}: {host}:{port} accepts connections but does not answer as a gRPC "
            f"(TPU) server ({detail}; waited at most {timeout:g} s). {hint}")


def _in_thread(what, function, timeout):
    """Runs ``function`` in a daemon thread; its result, or `StrategyError` after ``timeout``
    seconds (the thread is left behind: TensorFlow's connect cannot be interrupted)."""
    result = {}

    def target():
        try:
            result["value"] = function()
        except Exception as error:  # reported below, in the caller's thread
            result["error"] = error

    thread = threading.Thread(target=target, name=f"keras_bert-{what}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise StrategyError(f"{what}: no answer within {timeout:g} s; giving up.")
    if "error" in result:
        error = result["error"]
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise StrategyError(f"{what}: {type(error).__name__}: {first}") from error
    return result["value"]


def tpu_strategy(tpu, probe_timeout=PROBE_TIMEOUT, connect_timeout=CONNECT_TIMEOUT):
    """`tf.distribute.TPUStrategy` on ``tpu``; `StrategyError` within seconds when it cannot
    be reached (see the module docstring)."""
    address = _tpu_address(tpu)
    if address is not None:
        _probe(tpu, *address, probe_timeout)

    def connect():
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        if tpu != "local":
            tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return resolver

    resolver = _in_thread(f"--tpu={tpu}: connecting to the TPU", connect, connect_timeout)
    return tf.distribute.TPUStrategy(resolver)


def strategy_from_flags(strategy="default", tpu=None, num_gpus=0, tf_config=None):
    """The `tf.distribute.Strategy` the flags ask for (see the module docstring).

    Args:
        strategy: one of `STRATEGIES`.
        tpu: a Cloud TPU name, ``"local"`` or ``grpc://host:port``; implies ``tpu``.
        num_gpus: GPUs to use (``mirrored``: 0 means every logical CPU device).
        tf_config: TF_CONFIG's text (default: the environment variable).

    Raises:
        StrategyError: contradictory flags, a bad TF_CONFIG, missing GPUs, an unreachable TPU.

    Example:

    >>> strategy_from_flags("one_device").num_replicas_in_sync
    1
    >>> strategy_from_flags("mirrored", num_gpus=-1)
    Traceback (most recent call last):
    ...
    keras_bert.training.distribution.StrategyError: --num_gpus must be >= 0, got -1
    """
    if strategy not in STRATEGIES:
        raise StrategyError(f"--strategy must be one of {', '.join(STRATEGIES)}, got "
                            f"{strategy!r}")
    if isinstance(num_gpus, bool) or not isinstance(num_gpus, int) or num_gpus < 0:
        raise StrategyError(f"--num_gpus must be >= 0, got {num_gpus!r}")
    if tpu and strategy not in ("default", "tpu"):
        raise StrategyError(f"--tpu={tpu} asks for a TPU, but --strategy={strategy}; give "
                            "--strategy=tpu (or leave it at default) with --tpu")
    if tpu and num_gpus:
        raise StrategyError(f"--tpu={tpu} and --num_gpus={num_gpus} contradict each other")
    config = check_tf_config(tf_config)
    if strategy == "default":
        if tpu:
            strategy = "tpu"
        elif config is not None and _num_tasks(config) > 1:
            strategy = "multi_worker_mirrored"
        elif num_gpus > 1:
            strategy = "mirrored"
    if strategy == "tpu":
        if not tpu:
            raise StrategyError("--strategy=tpu needs --tpu (a Cloud TPU name, 'local', or "
                                "grpc://host:8470)")
        return tpu_strategy(tpu)
    gpus = tf.config.list_physical_devices("GPU")  # (logical ones would start the context)
    if num_gpus > len(gpus):
        raise StrategyError(f"--num_gpus={num_gpus}, but TensorFlow sees {len(gpus)} GPU(s)")
    if strategy == "multi_worker_mirrored":
        if config is None:
            raise StrategyError("--strategy=multi_worker_mirrored needs TF_CONFIG (the cluster "
                                "and this worker's task) in the environment")
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        return tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    if strategy == "mirrored":
        devices = ([f"/gpu:{i}" for i in range(num_gpus)] if num_gpus
                   else [d.name for d in tf.config.list_logical_devices("CPU")])
        return tf.distribute.MirroredStrategy(devices=devices)
    if strategy == "one_device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if num_gpus else "/cpu:0")
    return tf.distribute.get_strategy()


def worker_role(strategy):
    """``(is_chief, task_type, task_id)`` of this process in ``strategy``'s cluster.

    The chief is the ``chief`` task, or worker 0 of a cluster without one; single-machine
    strategies have one process, the chief.

    >>> worker_role(tf.distribute.get_strategy())
    (True, None, None)
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    task_type = getattr(resolver, "task_type", None)
    task_id = getattr(resolver, "task_id", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or task_type is None:
        return True, None, None
    cluster = resolver.cluster_spec().as_dict()
    is_chief = task_type == "chief" or (task_type == "worker" and task_id == 0
                                        and "chief" not in cluster)
    return is_chief, task_type, task_id


def strategy_name(strategy):
    """The public name of ``strategy``'s class (TensorFlow's multi-worker strategy calls
    itself CollectiveAllReduceStrategy).

    >>> strategy_name(tf.distribute.OneDeviceStrategy("/cpu:0"))
    'OneDeviceStrategy'
    """
    for cls, name in ((tf.distribute.MultiWorkerMirroredStrategy, "MultiWorkerMirroredStrategy"),
                      (tf.distribute.MirroredStrategy, "MirroredStrategy"),
                      (tf.distribute.TPUStrategy, "TPUStrategy"),
                      (tf.distribute.OneDeviceStrategy, "OneDeviceStrategy")):
        if isinstance(strategy, cls):
            return name
    return "the default strategy"
