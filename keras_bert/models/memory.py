"""Refusing encoder sizes whose weights cannot fit in memory, before any variable is made.

Without this check a ``max_position_embeddings=10**9`` reaches TensorFlow's allocator, which
fails seconds later with a dump of its state. The check needs only the `BertConfig`: the
number of weights is arithmetic, so it answers at once however large the sizes are.
"""


import tensorflow as tf

# Building a variable holds the initializer's output and a copy besides the variable itself:
# measured peak on TF 2.21 (TruncatedNormal) about 3x the largest table, i.e. two extra copies.
_INITIALIZER_COPIES = 2

_MEMINFO = "/proc/meminfo"
# The container's memory limit and usage: cgroup v2, then v1.
_CGROUP_FILES = (
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)


class ModelTooLargeError(MemoryError):
    """The weights of a configuration would not fit in the memory available.

    It is a `MemoryError`; `BertEncoder` raises it before making any variable:

    >>> from keras_bert import BertConfig, BertEncoder
    >>> try:
    ...     BertEncoder(BertConfig(vocab_size=10**12))
    ... except ModelTooLargeError as error:
    ...     print(error)
    BertEncoder: the weights of this BertConfig take ... bytes (... float32) ... the largest table,
    word_embeddings [1000000000000, 768], from vocab_size=1000000000000), but only ... bytes
    (...) of memory are available. Reduce vocab_size ...
    """


def available_memory():
    """Bytes this process can still allocate, or None where the system does not say.

    Linux's ``MemAvailable``, lowered to what the container's memory limit still leaves.
    """
    found = []
    try:
        with open(_MEMINFO) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)  # the value is in kB
    except (OSError, ValueError, IndexError):
        pass
    for limit_file, usage_file in _CGROUP_FILES:
        try:
            with open(limit_file) as f:
                limit = f.read().strip()
            with open(usage_file) as f:
                usage = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 2**62:  # "max" or a huge number: no limit
            found.append(max(int(limit) - usage, 0))
    return min(found) if found else None


def _tables(config):
    """(name, shape, config field) of the largest variable of each kind."""
    h, i = config.hidden_size, config.intermediate_size
    return [
        ("word_embeddings", (config.vocab_size, h), "vocab_size"),
        ("position_embeddings", (config.max_position_embeddings, h), "max_position_embeddings"),
        ("token_type_embeddings", (config.type_vocab_size, h), "type_vocab_size"),
        ("intermediate/dense/kernel", (h, i), "intermediate_size"),
        ("attention/self/query/kernel", (h, h), "hidden_size"),
    ]


def _human(size):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1024


def check_weights_fit(config, variable_dtype="float32", owner="BertEncoder"):
    """Raises `ModelTooLargeError` if building ``config``'s weights would exceed the memory
    available; the message gives both in bytes and names the largest table."""
    itemsize = tf.as_dtype(variable_dtype).size
    weights = config.num_parameters() * itemsize
    name, shape, field = max(_tables(config), key=lambda t: t[1][0] * t[1][1])
    largest = shape[0] * shape[1] * itemsize
    needed = weights + _INITIALIZER_COPIES * largest
    available = available_memory()
    if available is None or needed <= available:
        return
    raise ModelTooLargeError(
        f"{owner}: the weights of this BertConfig take {weights:,} bytes "
        f"({_human(weights)}, {variable_dtype}) and building them about {needed:,} bytes "
        f"({_human(needed)}: the initializer briefly holds {_INITIALIZER_COPIES} more copies of "
        f"the largest table, {name} {list(shape)}, from {field}={getattr(config, field)}), "
        f"but only {available:,} bytes ({_human(available)}) of memory are available. "
        f"Reduce {field} or the other sizes (vocab_size={config.vocab_size}, "
        f"hidden_size={config.hidden_size}, num_hidden_layers={config.num_hidden_layers}, "
        f"intermediate_size={config.intermediate_size}, "
        f"max_position_embeddings={config.max_position_embeddings})."
    )
