"""TF Serving's REST JSON for tensors (its ``json_tensor`` conventions), both ways.

A predict request is a JSON object with an optional ``"signature_name"`` and either

- ``"instances"`` (row format): a list with one item per example; an item is the value of the
  signature's only input, or an object ``{input_name: value, ...}``; or
- ``"inputs"`` (columnar format): the batched value of the only input, or an object
  ``{input_name: batched value, ...}``.

Values are (nested) lists of numbers, booleans or strings; a binary string is written
``{"b64": "<base64>"}``. The answer is ``{"predictions": [...]}`` (one item per example: a
value if the signature has one output, else an object) for the row format and
``{"outputs": ...}`` for the columnar one. Output strings are UTF-8 text, or ``{"b64": ...}``
when the output's name ends in ``_bytes`` (or the bytes are not UTF-8).

Every problem is an INVALID_ARGUMENT `ServingError` naming the input, the instance and what
was wrong: JSON nested deeper than `MAX_DEPTH` levels too, and a request with more rows than
``--max_request_batch`` before any of its values is converted.

An empty batch is run like any other and answered with no rows, in both formats and as gRPC
answers it: ``{"instances": []}`` gives ``{"predictions": []}``, ``{"inputs": {"text": []}}``
gives ``{"outputs": {...: []}}``. (TF Serving runs an empty batch of ``"inputs"`` or gRPC and
answers so, but refuses ``{"instances": []}``: ``tensorflow_serving/util/json_tensor.cc``,
``FillPredictRequestFromJson``, "No values in 'instances' array"; here it is the same empty
batch.) A JSON ``[]`` carries no shape past its length, so an empty value of an input of rank
2 or more is read with that rank, its unknown dimensions 1: ``(0, 1)`` for
``input_word_ids`` ``[?, ?]``.
"""

import base64
import binascii
import json

import numpy as np
import tensorflow as tf

from keras_bert.serving.errors import invalid
from keras_bert.serving.signatures import dtype_name

REQUEST_KEYS = ("signature_name", "instances", "inputs")
MAX_DEPTH = 32  # levels of JSON lists a value may have (a tensor of rank 31 in row format)


def parse_request(body):
    """The request object of a predict body (bytes)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise invalid(f"the request body is not valid UTF-8 (byte {error.start}: "
                      f"{body[error.start:error.start + 1]!r}); JSON must be UTF-8") from None
    try:
        request = json.loads(text)
    except json.JSONDecodeError as error:
        raise invalid(f"the request body is not valid JSON: {error.msg} at line {error.lineno} "
                      f"column {error.colno}") from None
    except RecursionError:
        raise invalid(f"the request body is JSON nested too deeply (a value may have at most "
                      f"{MAX_DEPTH} levels of lists)") from None
    if not isinstance(request, dict):
        raise invalid(f"the request body must be a JSON object with 'instances' or 'inputs', "
                      f"got a JSON {_kind(request)}")
    unknown = sorted(set(request) - set(REQUEST_KEYS))
    if unknown:
        raise invalid(f"unknown key(s) {unknown} in the request; it takes {list(REQUEST_KEYS)}")
    if ("instances" in request) == ("inputs" in request):
        raise invalid("the request must have either 'instances' (row format) or 'inputs' "
                      "(columnar format), " + ("not both" if "inputs" in request else
                                               "and has neither"))
    name = request.get("signature_name", "")
    if not isinstance(name, str):
        raise invalid(f"'signature_name' must be a string, got a JSON {_kind(name)}")
    return request


def request_inputs(request, signature, limits=None):
    """(inputs as name -> numpy array, "row" or "columnar") of a parsed request; `limits`
    (`RequestLimits`): its rows are checked before anything is converted."""
    if "instances" in request:
        if limits is not None and isinstance(request["instances"], list):
            limits.check_rows(len(request["instances"]))
        return _rows(request["instances"], signature), "row"
    if limits is not None:
        values = request["inputs"].values() if _is_named(request["inputs"]) \
            else [request["inputs"]]
        for value in values:
            if isinstance(value, list):
                limits.check_rows(len(value))
    return _columns(request["inputs"], signature), "columnar"


def _is_named(value):
    return isinstance(value, dict) and set(value) != {"b64"}


def _only_input(signature, what):
    if len(signature.inputs) != 1:
        raise invalid(f"signature {signature.name!r} has {len(signature.inputs)} inputs "
                      f"{sorted(signature.inputs)}: give {what} as objects keyed by input name")
    return next(iter(signature.inputs))


def _rows(instances, signature):
    if not isinstance(instances, list):
        raise invalid(f"'instances' must be a list (one item per example), got a JSON "
                      f"{_kind(instances)}")
    if not instances:  # an empty batch: every input with no rows
        return {key: to_array([], signature, key, "'instances'") for key in signature.inputs}
    named = [_is_named(item) for item in instances]
    if not any(named):
        key = _only_input(signature, "instances")
        return {key: to_array(instances, signature, key, "'instances'")}
    if not all(named):
        i = named.index(False)
        raise invalid(f"instance {i} is not an object while instance {named.index(True)} is: "
                      "give every instance the same form")
    keys = set(instances[0])
    for i, item in enumerate(instances):
        if set(item) != keys:
            raise invalid(f"instance {i} has inputs {sorted(item)}, instance 0 has "
                          f"{sorted(keys)}: every instance needs the same inputs")
    signature.check_names(keys)
    return {key: to_array([item[key] for item in instances], signature, key, "'instances'")
            for key in keys}


def _columns(inputs, signature):
    if _is_named(inputs):
        signature.check_names(inputs)
        return {key: to_array(value, signature, key, f"'inputs'[{key!r}]")
                for key, value in inputs.items()}
    key = _only_input(signature, "'inputs'")
    return {key: to_array(inputs, signature, key, "'inputs'")}


def to_array(value, signature, key, where):
    """A JSON value as a numpy array of input `key`'s dtype."""
    dtype = signature.inputs[key].dtype
    flat, shape = _flatten(value, where, key)
    rank = signature.inputs[key].shape.rank
    if shape == (0,) and rank is not None and rank > 1:  # [] of a [batch, ...] input
        # No rows, of the known shape past the batch, 1 where unknown (a model may refuse
        # sequences of 0 tokens even in an empty batch).
        shape = (0,) + tuple(d or 1 for d in signature.inputs[key].shape[1:])
    convert = _STRING if dtype == tf.string else _converter(dtype)
    items = []
    for index, item in enumerate(flat):
        try:
            items.append(convert(item))
        except (TypeError, ValueError) as error:
            position = np.unravel_index(index, shape) if shape else ()
            at = f" at {list(map(int, position))}" if shape else ""
            raise invalid(f"input {key!r} of signature {signature.name!r}{at} in {where}: "
                          f"{error}") from None
    if dtype == tf.string:
        array = np.empty(len(items), dtype=object)
        array[:] = items
        return array.reshape(shape)
    try:
        return np.array(items, dtype=dtype.as_numpy_dtype).reshape(shape)
    except OverflowError:
        raise invalid(f"input {key!r} in {where}: a value does not fit {dtype_name(dtype)}"
                      ) from None


def _flatten(value, where, key, depth=0):
    """(flat list of scalars, shape) of a nested list; ValueError-free ragged check."""
    if not isinstance(value, list):
        return [value], ()
    if depth == MAX_DEPTH:
        raise invalid(f"input {key!r} in {where}: lists nested more than {MAX_DEPTH} levels "
                      "deep")
    if not value:
        return [], (0,)
    parts = [_flatten(item, where, key, depth + 1) for item in value]
    shapes = {shape for _, shape in parts}
    if len(shapes) > 1:
        raise invalid(f"input {key!r} in {where}: a ragged list (items of shapes "
                      f"{sorted(list(s) for s in shapes)}) is not a tensor")
    return [x for flat, _ in parts for x in flat], (len(value),) + shapes.pop()


def _string(item):
    if isinstance(item, str):
        try:
            return item.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string that is not valid Unicode (a lone surrogate escape); "
                             "send binary data as {\"b64\": \"...\"}") from None
    if isinstance(item, dict) and set(item) == {"b64"}:
        if not isinstance(item["b64"], str):
            raise ValueError("{\"b64\": ...} needs a base64 string")
        try:
            return base64.b64decode(item["b64"], validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("{\"b64\": ...} holds invalid base64") from None
    raise TypeError(f"expects string values, got a JSON {_kind(item)}")


_STRING = _string


def _converter(dtype):
    name = dtype_name(dtype)
    if dtype == tf.bool:
        def convert(item):
            if not isinstance(item, bool):
                raise TypeError(f"expects bool values, got a JSON {_kind(item)}")
            return item
    elif dtype.is_integer:
        def convert(item):
            if isinstance(item, bool) or not isinstance(item, int):
                raise TypeError(f"expects {name} values (whole numbers), got a JSON "
                                f"{_kind(item)} {json.dumps(item)[:40]}")
            if not dtype.min <= item <= dtype.max:
                raise ValueError(f"{item} does not fit {name}")
            return item
    elif dtype.is_floating:
        def convert(item):
            if isinstance(item, bool) or not isinstance(item, (int, float)):
                raise TypeError(f"expects {name} values, got a JSON {_kind(item)}")
            return item
    else:
        def convert(item):
            raise TypeError(f"inputs of dtype {name} are not supported over REST")
    return convert


def _kind(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return "null"


# ---- responses ----------------------------------------------------------------------------
def to_json(array, name):
    """A numpy output as JSON-ready lists; bytes as text or {"b64": ...}."""
    array = np.asarray(array)
    if array.dtype.kind in "SO":
        as_b64 = name.endswith("_bytes")

        def one(item):
            if isinstance(item, bytes):
                if not as_b64:
                    try:
                        return item.decode("utf-8")
                    except UnicodeDecodeError:
                        pass
                return {"b64": base64.b64encode(item).decode("ascii")}
            return item

        if array.ndim == 0:
            return one(array.item())
        return np.vectorize(one, otypes=[object])(array).tolist()
    if array.dtype.kind == "f" and array.dtype.itemsize < 8 or array.dtype.name == "bfloat16":
        # float32's shortest digits (0.5011597, not 0.5011597275733948), as TF Serving writes
        return array.astype(np.float32).astype(str).astype(np.float64).tolist()
    return array.tolist()


def response_body(outputs, form):
    """The JSON object answering a predict request of the given form."""
    if form == "columnar":
        if len(outputs) == 1:
            (name, value), = outputs.items()
            return {"outputs": to_json(value, name)}
        return {"outputs": {name: to_json(value, name) for name, value in outputs.items()}}
    sizes = {name: (np.shape(v)[0] if np.ndim(v) else None) for name, v in outputs.items()}
    if None in sizes.values() or len(set(sizes.values())) > 1:
        raise invalid(f"the outputs cannot be given per instance: their batch sizes differ "
                      f"({sizes}); ask in the columnar format ('inputs')")
    if len(outputs) == 1:
        (name, value), = outputs.items()
        return {"predictions": to_json(value, name)}
    columns = {name: to_json(value, name) for name, value in outputs.items()}
    rows = next(iter(sizes.values()))
    return {"predictions": [{name: column[i] for name, column in columns.items()}
                            for i in range(rows)]}
