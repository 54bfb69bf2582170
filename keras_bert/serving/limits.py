"""What one request may ask of the server: its bytes, its rows (texts), the length of each
text, each limit with a flag of `tools/serve.py` and a safe default.

A refusal is INVALID_ARGUMENT (HTTP 400; a REST body over the byte limit is 413) whose message
says what the request had, what the server takes and which flag sets it. Limits are checked
before anything is decoded or computed: a gRPC TensorProto by its DECLARED shape, because
TensorFlow's ``Tensor::FromProto`` (and ``tf.make_ndarray``) repeats the last value to fill a
shape, as TF Serving does: a 41-byte request declaring a string tensor of shape ``[5000]``
with one value asks for 5,000 rows.
"""

import dataclasses
import math

from keras_bert.serving.errors import invalid

MIB = 2**20


@dataclasses.dataclass(frozen=True)
class RequestLimits:
    """Limits on one request; 0 turns a limit off.

    Args:
      max_request_bytes: bytes of a request: a REST body, a gRPC message, and the tensor data
        a gRPC request declares once expanded as TensorFlow expands it
        (``--max_request_bytes``, default 16 MiB).
      max_request_batch: rows (texts) one request may have (``--max_request_batch``,
        default 1024).
      max_text_bytes: UTF-8 bytes of one string input (``--max_text_bytes``, default 64 KiB;
        a BERT reads at most a few hundred words of it).

    Example:

    >>> limits = RequestLimits(max_request_batch=8)
    >>> limits.check_rows(8)
    >>> limits.check_rows(9)
    Traceback (most recent call last):
    ...
    keras_bert.serving.errors.ServingError: the request has a batch of 9 rows; this server takes at most 8 per request (--max_request_batch)
    """

    max_request_bytes: int = 16 * MIB
    max_request_batch: int = 1024
    max_text_bytes: int = 64 * 1024

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{field.name} must be an integer >= 0 (0: no limit), got "
                                 f"{value!r}")

    def body_message(self, size, what="the request body"):
        """The refusal of `size` bytes (None when within the limit)."""
        if self.max_request_bytes and size > self.max_request_bytes:
            return (f"{what} has {size} bytes; this server takes at most "
                    f"{self.max_request_bytes} bytes per request (--max_request_bytes)")
        return None

    def check_bytes(self, size, what="the request"):
        message = self.body_message(size, what)
        if message:
            raise invalid(message)

    def check_rows(self, rows):
        if self.max_request_batch and rows is not None and rows > self.max_request_batch:
            raise invalid(f"the request has a batch of {rows} rows; this server takes at most "
                          f"{self.max_request_batch} per request (--max_request_batch)")

    def check_text(self, size, key, position=""):
        if self.max_text_bytes and size > self.max_text_bytes:
            at = f" at {position}" if position else ""
            raise invalid(f"input {key!r}{at} is a string of {size} bytes; this server takes "
                          f"at most {self.max_text_bytes} bytes per string (--max_text_bytes)")

    def check_texts(self, key, array):
        """Checks every string of a decoded numpy array of bytes."""
        if not self.max_text_bytes or array.dtype.kind not in "OS" or not array.size:
            return
        import numpy as np

        sizes = np.fromiter((len(v) for v in array.flat), dtype=np.int64, count=array.size)
        longest = int(sizes.argmax())
        if sizes[longest] > self.max_text_bytes:
            position = [int(i) for i in np.unravel_index(longest, array.shape)]
            self.check_text(int(sizes[longest]), key, position)

    def check_tensor_proto(self, key, proto, itemsize):
        """Checks a TensorProto's declared shape before it is decoded: no negative dimension,
        the rows (its first dimension) and its expanded bytes (``itemsize`` bytes a number,
        a string's own bytes, at least 1 an element) within the limits."""
        dims = [d.size for d in proto.tensor_shape.dim]
        negative = [d for d in dims if d < 0]
        if negative or proto.tensor_shape.unknown_rank:
            what = (f"a negative dimension {negative[0]}" if negative else "an unknown rank")
            raise invalid(f"input {key!r} declares the shape {dims} with {what}: a request's "
                          "tensors need a known shape of sizes >= 0")
        if dims:
            self.check_rows(dims[0])
        count = math.prod(dims)
        if itemsize is None:  # strings: each one's bytes, the last repeated to fill the shape
            values = proto.string_val
            given = min(len(values), count)
            size = sum(max(1, len(v)) for v in values[:given])
            if count > given:
                size += (count - given) * max(1, len(values[-1]) if values else 1)
        else:
            size = count * itemsize
        message = self.body_message(size, f"input {key!r} (shape {dims})")
        if message:
            raise invalid(message + "; counted as TensorFlow expands it (the last value "
                          "repeated to fill the declared shape)")

