r"""Serves SavedModels (or LiteRT models) with TF Serving's gRPC and REST APIs, taking
tensorflow_model_server's flags.

    python tools/serve.py --model_name=sentiment --model_base_path=/models/sentiment \
        --port=8500 --rest_api_port=8501
    python tools/serve.py --model_config_file=models.config --enable_batching \
        --max_batch_size=32 --batch_timeout_micros=2000

--prefer_tflite_model serves a version directory's model.tflite (a LiteRT model beside or
instead of its saved_model.pb), as TF Serving's flag does. The newest numeric version
directory under each base path is served, and a new one dropped in
while serving is picked up (every --file_system_poll_wait_seconds), loaded and warmed up in a
process of its own while the old one answers. Requests wait in bounded queues and are
refused at once when they are full; requests whose clients gave up are dropped; each request
is held to --max_request_bytes, --max_request_batch and --max_text_bytes. It listens on
127.0.0.1 unless --host says otherwise. Client code written for TF Serving works against it
unchanged: see docs/serving.md. SIGINT or SIGTERM stops it.
"""

import os
import pathlib
import signal
import sys
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the keras_bert here

from absl import app, flags  # noqa: E402

flags.DEFINE_integer("port", 8500, "Port for the gRPC API (0: any free port, printed).",
                     lower_bound=0, upper_bound=65535)
flags.DEFINE_integer("rest_api_port", 0, "Port for the HTTP/REST API; 0 serves no REST API.",
                     lower_bound=0, upper_bound=65535)
flags.DEFINE_string("host", "127.0.0.1", "Address to listen on (0.0.0.0: every interface).")
flags.DEFINE_string("model_name", "default", "Name of the model (with --model_base_path).")
flags.DEFINE_string("model_base_path", None, "Directory of the model's numeric version "
                    "directories (<base>/1, <base>/2, ...).")
flags.DEFINE_string("model_config_file", None, "A ModelServerConfig text proto listing "
                    "several models (instead of --model_name/--model_base_path).")
flags.DEFINE_float("file_system_poll_wait_seconds", 1, "Seconds between looks for new "
                   "versions; 0: only at start; negative: never.")
flags.DEFINE_bool("enable_batching", False, "Batch concurrent requests to a signature into "
                  "one model call.")
flags.DEFINE_string("batching_parameters_file", None, "A BatchingParameters text proto "
                    "(max_batch_size { value: 32 } ...); the flags below override it.")
flags.DEFINE_integer("max_batch_size", None, "Most rows in one batched model call "
                     "(default 1000).", lower_bound=1)
flags.DEFINE_integer("batch_timeout_micros", None, "How long the oldest request may wait for "
                     "others to join its batch (default 0).", lower_bound=0)
flags.DEFINE_integer("num_batch_threads", None, "Batches run at once (default: CPUs).",
                     lower_bound=1)
flags.DEFINE_integer("max_enqueued_batches", None, "Queue bound, in batches (default 10).",
                     lower_bound=1)
flags.DEFINE_bool("batch_group_by_length", None, "Run a batch of text requests as one model "
                  "call per length class of its texts (default true; keras_bert's addition: "
                  "its signatures pad each call to its longest text).")
flags.DEFINE_integer("max_batch_tokens", None, "Close a batch before its rows times its "
                     "longest sequence (tokens; estimated from UTF-8 bytes for texts) pass this "
                     "budget (default 0: no budget; keras_bert's addition).", lower_bound=0)
flags.DEFINE_integer("max_request_bytes", 16 * 2**20, "Most bytes in one request: a REST body, "
                     "a gRPC message, and a gRPC request's tensors as TensorFlow expands them "
                     "(0: no limit).", lower_bound=0)
flags.DEFINE_integer("max_request_batch", 1024, "Most rows (texts) one request may send "
                     "(0: no limit).", lower_bound=0)
flags.DEFINE_integer("max_text_bytes", 64 * 1024, "Most UTF-8 bytes in one string input "
                     "(0: no limit).", lower_bound=0)
flags.DEFINE_integer("num_request_threads", 0, "Without batching: model calls that run at once "
                     "(0: the CPU count).", lower_bound=0)
flags.DEFINE_integer("max_enqueued_requests", 64, "Without batching: requests that may wait "
                     "for a model call; more are refused at once (RESOURCE_EXHAUSTED, HTTP "
                     "429).", lower_bound=1)
flags.DEFINE_integer("grpc_max_threads", 32, "gRPC requests handled at once; more are refused "
                     "at once (RESOURCE_EXHAUSTED).", lower_bound=1)
flags.DEFINE_string("grpc_channel_arguments", "", "More gRPC server arguments, comma "
                    "separated name=value pairs (e.g. grpc.max_connection_age_ms=2000).")
flags.DEFINE_integer("rest_api_num_threads", 0, "REST requests processed at once (0: 4 per "
                     "CPU).", lower_bound=0)
flags.DEFINE_integer("rest_api_timeout_in_ms", 30000, "How long a REST request may wait for "
                     "its answer (0: no limit).", lower_bound=0)
flags.DEFINE_integer("rest_api_read_timeout_in_ms", 5000, "How long a REST request that has "
                     "begun may send nothing before it is answered 408 and its connection "
                     "closed.", lower_bound=1)
flags.DEFINE_bool("enable_model_warmup", True, "Warm each version up before it serves: the "
                  "requests of its assets.extra/tf_serving_warmup_requests, else one call per "
                  "signature.")
flags.DEFINE_integer("num_request_iterations_for_warmup", 1, "Times each warm-up request is "
                     "run.", lower_bound=1)
flags.DEFINE_integer("tensorflow_intra_op_parallelism", 0, "Threads of one TensorFlow op in a "
                     "version's process (0: TensorFlow's default).", lower_bound=0)
flags.DEFINE_integer("tensorflow_inter_op_parallelism", 0, "TensorFlow ops that run at once "
                     "in a version's process (0: TensorFlow's default).", lower_bound=0)
flags.DEFINE_bool("prefer_tflite_model", False, "Serve a version directory's model.tflite (a "
                  "LiteRT model: model.export(path, format='litert')) instead of its "
                  "saved_model.pb when it has one; else its SavedModel, as TF Serving does. "
                  "Needs ai-edge-litert (the [litert] extra).")
flags.DEFINE_integer("num_tflite_pools", 1, "LiteRT interpreters per version that run at once "
                     "(the CPUs are shared among them).", lower_bound=1)
FLAGS = flags.FLAGS

_BATCHING_FLAGS = ("max_batch_size", "batch_timeout_micros", "num_batch_threads",
                   "max_enqueued_batches", "batch_group_by_length", "max_batch_tokens")


@flags.multi_flags_validator(
    ("enable_batching", "batching_parameters_file") + _BATCHING_FLAGS,
    message="--batching_parameters_file, --max_batch_size, --batch_timeout_micros, "
            "--num_batch_threads, --max_enqueued_batches, --batch_group_by_length and "
            "--max_batch_tokens need --enable_batching")
def _batching_flags_need_batching(values):
    return values["enable_batching"] or all(
        values[name] is None for name in ("batching_parameters_file",) + _BATCHING_FLAGS)


def _batching(server_lib):
    if not FLAGS.enable_batching:
        return None
    options = (server_lib.read_batching_parameters_file(FLAGS.batching_parameters_file)
               if FLAGS.batching_parameters_file else server_lib.BatchingOptions())
    overrides = {name.replace("batch_group_by", "group_by"): FLAGS[name].value
                 for name in _BATCHING_FLAGS if FLAGS[name].value is not None}
    if overrides:
        import dataclasses

        try:
            options = dataclasses.replace(options, **overrides)
        except ValueError as error:
            raise server_lib.ServerConfigError(str(error)) from None
    return options


def _logging():
    import logging

    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
    logger = logging.getLogger("keras_bert.serving")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def main(argv):
    if len(argv) > 1:
        sys.exit(f"serve.py: unexpected arguments {argv[1:]}; everything is a --flag")
    import keras_bert  # noqa: F401  (first: loads TensorFlow quietly)
    from keras_bert.backend import quiet_native_stderr
    from keras_bert import serving as server_lib

    _logging()
    try:
        models = server_lib.models_from_flags(FLAGS.model_name, FLAGS.model_base_path,
                                              FLAGS.model_config_file)
        from keras_bert.serving.grpc_service import parse_channel_arguments

        limits = server_lib.RequestLimits(max_request_bytes=FLAGS.max_request_bytes,
                                          max_request_batch=FLAGS.max_request_batch,
                                          max_text_bytes=FLAGS.max_text_bytes)
        server = server_lib.ModelServer(
            models, grpc_port=FLAGS.port, rest_api_port=FLAGS.rest_api_port or None,
            host=FLAGS.host, batching=_batching(server_lib),
            poll_wait_seconds=FLAGS.file_system_poll_wait_seconds, limits=limits,
            grpc_max_threads=FLAGS.grpc_max_threads,
            grpc_channel_arguments=parse_channel_arguments(FLAGS.grpc_channel_arguments),
            rest_api_num_threads=FLAGS.rest_api_num_threads or None,
            rest_api_timeout_in_ms=FLAGS.rest_api_timeout_in_ms,
            rest_api_read_timeout_in_ms=FLAGS.rest_api_read_timeout_in_ms,
            num_request_threads=FLAGS.num_request_threads,
            max_enqueued_requests=FLAGS.max_enqueued_requests,
            enable_model_warmup=FLAGS.enable_model_warmup,
            num_request_iterations_for_warmup=FLAGS.num_request_iterations_for_warmup,
            tensorflow_intra_op_parallelism=FLAGS.tensorflow_intra_op_parallelism,
            tensorflow_inter_op_parallelism=FLAGS.tensorflow_inter_op_parallelism,
            prefer_tflite_model=FLAGS.prefer_tflite_model,
            num_tflite_pools=FLAGS.num_tflite_pools)
        with quiet_native_stderr():
            server.start()
    except server_lib.ServerConfigError as error:
        sys.exit(f"serve.py: {error}")
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    for model in models:
        versions = [s.version for s in server.manager.status(model.name)
                    if s.state == "AVAILABLE"]
        files = sorted({server.manager.resolve(model.name, v).served_file for v in versions})
        print(f"Serving model {model.name!r} version(s) {versions} from {model.base_path} "
              f"({', '.join(files)})")
    batching = server.manager.batching
    if batching is not None:
        print(f"Batching: max_batch_size={batching.max_batch_size}, batch_timeout_micros="
              f"{batching.batch_timeout_micros}, num_batch_threads={batching.threads}, "
              f"group_by_length={batching.group_by_length}, max_batch_tokens="
              f"{batching.max_batch_tokens}")
    else:
        options = server.manager.options
        print(f"Queue: num_request_threads={options.request_threads}, "
              f"max_enqueued_requests={options.max_enqueued_requests}")
    limits = server.manager.limits
    print(f"Limits: max_request_bytes={limits.max_request_bytes}, max_request_batch="
          f"{limits.max_request_batch}, max_text_bytes={limits.max_text_bytes} (0: none)")
    print(f"Running gRPC ModelServer at {server.grpc_address} ...")
    if server.rest_url:
        print(f"Exporting HTTP/REST API at:{server.rest_url} ...")
    sys.stdout.flush()
    while not stop.wait(0.5):
        pass
    print("Stopping the model server", flush=True)
    _print_model_calls(server.manager)
    server.stop()


def _print_model_calls(manager):
    """How many model calls served how many rows, per signature (batching merges calls)."""
    for name in manager.model_names:
        try:
            servable = manager.resolve(name)
        except Exception:  # nothing loaded: nothing to say
            continue
        for signature in servable.signatures.values():
            if signature.calls:
                print(f"Model calls: {name}/{servable.version}/{signature.name}: "
                      f"{signature.calls} for {signature.rows_run} rows "
                      f"({signature.rows_run / signature.calls:.2f} rows per call)")
    sys.stdout.flush()


if __name__ == "__main__":
    app.run(main)
