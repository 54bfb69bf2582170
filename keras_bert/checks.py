"""The argument and tensor checks of every keras_bert layer, model, option class and tool.

Keyword arguments: `check_kwargs` (and `check_layer_kwargs`, for a Keras layer's constructor
or a method that ends in one, with Keras' layer arguments accepted too) turns a misspelled
``dropuot=0.2`` or ``nme="x"`` into one TypeError that names it, suggests the close name and
lists the accepted ones (Keras layers would raise a bare ValueError, functional models drop
them); `keyword_parameters` lists what a function takes.

Arguments: `integer`, `number` and `boolean` check a constructor or call argument and raise
ValueError naming it and the value it got (a bool is not a number, `12.7` is not an integer,
`"128"` is neither).

Tensors: what the static shapes and dtypes tell is checked in Python at once, eagerly and
while tracing (`tf.function`, `dataset.map`): ValueError for shapes and ranks, TypeError for
dtypes. What only the run time knows inside a graph (a dimension left unknown while tracing,
the values) becomes a `tf.debugging.Assert` with the same message, which the caller puts in
front of every kernel with `after`; it raises `tf.errors.InvalidArgumentError`. Eagerly every
shape and value is known, so eager calls always get the ValueError.
"""

import difflib
import inspect
import math
import numbers

import keras
import numpy as np
import tensorflow as tf

# The keyword arguments every Keras layer accepts: those of keras.layers.Layer.__init__, and
# input_shape / input_dim, which it takes (with a warning) from its **kwargs.
KERAS_LAYER_KWARGS = (
    "name", "dtype", "trainable", "autocast", "activity_regularizer", "input_shape", "input_dim"
)


class TaskInputError(ValueError, TypeError):
    """Inputs that a task model's fit/evaluate/predict, or a preprocessor, cannot use: raw
    input of a form it does not read (`keras_bert.text.raw_inputs`, the one reader, names
    the segment, the row or the type and lists the forms), labels, empty batches.

    One error type for all of them, and both a ValueError and a TypeError (as numpy's
    AxisError is a ValueError and an IndexError): task models raised ValueError for input
    they could not read and the preprocessors TypeError for values that are not strings,
    so code that caught either keeps working.

    >>> from keras_bert.text.raw_inputs import read_raw_inputs
    >>> try:
    ...     read_raw_inputs([1, 2], batched=True)
    ... except TypeError as error:  # (a ValueError too)
    ...     print(str(error).split(":")[0])
    BertPreprocessor texts holds int value 1 among its texts (at row 0; 2 such entries)
    """

    # Raised while a preprocessor is traced (tf.function, dataset.map), it reaches the
    # caller as itself: AutoGraph turns exceptions of other classes than its known ones
    # (ValueError, TypeError, ...) into a StagingError (as TensorFlow's UnliftableError).
    ag_pass_through = True


# ---- arguments ----------------------------------------------------------------------------
def keyword_parameters(function, skip=()):
    """Names a function takes as keyword arguments (not ``self``, ``*args``, ``**kwargs``)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind in kinds and name != "self" and name not in skip
    )


def check_kwargs(owner, kwargs, accepted):
    """Raises `TypeError` if ``kwargs`` holds a name that no group of ``accepted`` has.

    Args:
        owner: what was called, for the message (``"TransformerBlock()"``).
        kwargs: the keyword arguments given.
        accepted: ``{description: names}``, e.g. ``{"BertConfig fields": (...), ...}``; the
            message lists each group.
    """
    known = [name for names in accepted.values() for name in names]
    unknown = [name for name in kwargs if name not in known]
    if not unknown:
        return
    described = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        described.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    plural = "s" if len(unknown) > 1 else ""
    groups = "; ".join(f"{what}: {', '.join(names)}" for what, names in accepted.items() if names)
    raise TypeError(
        f"{owner} got unknown keyword argument{plural} {', '.join(described)}. "
        f"It accepts {groups}."
    )


def check_layer_kwargs(owner, kwargs, accepted=None):
    """`check_kwargs` for a Keras layer's constructor, called with the ``**kwargs`` it passes
    on to ``keras.layers.Layer``, or for a method that ends in one (``from_preset``): its own
    arguments and Keras' layer arguments (`KERAS_LAYER_KWARGS`) are accepted.

    Args:
        owner: the layer (its class's constructor arguments are accepted), or what was
            called, for the message (``"BertTokenizer.from_preset"``), with ``accepted``.
        kwargs: the keyword arguments given.
        accepted: ``owner``'s own argument names (default: those of the layer's class).
    """
    if not isinstance(owner, str):
        accepted = keyword_parameters(type(owner).__init__) if accepted is None else accepted
        owner = type(owner).__name__
    accepted = tuple(dict.fromkeys(accepted))
    check_kwargs(f"{owner}()", kwargs, {
        f"{owner} arguments": accepted,
        "Keras layer arguments": tuple(k for k in KERAS_LAYER_KWARGS if k not in accepted),
    })


def integer(name, value, minimum=None, maximum=None):
    """`value` as an int; ValueError naming `name` unless it is an int in [minimum, maximum]."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be {bound}, got {value}")
    if maximum is not None and value > maximum:
        bound = f"<= {maximum}" if minimum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def number(name, value, low, high, low_open=False):
    """`value` as a float in [low, high] ((low, high] with `low_open`); ValueError otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise ValueError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    value = float(value)
    above_low = value > low if low_open else value >= low
    if math.isnan(value) or not above_low or value > high:
        interval = f"{'(' if low_open else '['}{low}, {high}]"
        raise ValueError(f"{name} must be in {interval}, got {value}")
    return value


def boolean(name, value):
    """`value` as a bool; ValueError unless it is True or False (not 0, 1 or "False")."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)

def hyperparameter(name, value, low=None, high=None, integer=False, low_inclusive=True):
    """A numeric hyper-parameter (optimizers, schedules) as int/float; ValueError naming it
    unless it is a finite number (an int with `integer`) within [low, high]."""
    ok_type = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, ok_type) or (
        not integer and not math.isfinite(value)
    ):
        kind = "an int" if integer else "a finite number"
        raise ValueError(f"{name} must be {kind}, got {value!r}.")
    value = int(value) if integer else float(value)
    if low is not None and (value < low or (value == low and not low_inclusive)):
        bound = ">=" if low_inclusive else ">"
        raise ValueError(f"{name} must be {bound} {low}, got {value!r}.")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value!r}.")
    return value


def count(name, value, low=1):
    """A count (number of classes, choices, ...) as an int >= low; ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}.")
    return int(value)


def rate(name, value):
    """A dropout rate as a float in [0, 1); ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}.")
    return float(value)


# ---- tensors ------------------------------------------------------------------------------
def is_eager(x):
    """True when x (a tensor, ragged or not) has concrete values now."""
    if isinstance(x, tf.RaggedTensor):
        x = x.flat_values
    return isinstance(x, tf.Tensor) and hasattr(x, "numpy") and tf.executing_eagerly()


def integer_tensor(x, name):
    """x (tensor, ragged tensor, array or nested lists) as an integer tf.Tensor/RaggedTensor.

    TypeError naming `name` when its values are not integers (float, string, bool ids).
    """
    if not isinstance(x, (tf.Tensor, tf.RaggedTensor)):
        try:
            x = tf.convert_to_tensor(x)
        except (ValueError, TypeError):
            try:  # nested lists of different lengths
                x = tf.ragged.constant(x)
            except (ValueError, TypeError) as err:
                raise TypeError(f"{name} must be integer ids, could not read {x!r:.200}: {err}")
        if x.dtype == tf.float32 and _size(x) == 0:  # [] or [[], []]: no ids at all
            x = tf.cast(x, tf.int32)
    if not x.dtype.is_integer:
        raise TypeError(f"{name} must hold integer ids, got dtype {x.dtype.name}")
    return x


def string_tensor(x, name):
    """x as a tf.string tensor (a KerasTensor stays one); TypeError naming `name` when it
    holds anything else."""
    if isinstance(x, keras.KerasTensor):
        if x.dtype != "string":
            raise TypeError(f"{name} must be strings (tf.string), got dtype {x.dtype}")
        return x
    if isinstance(x, tf.RaggedTensor):
        raise TypeError(f"{name} must be a string tensor, got a RaggedTensor")
    if not isinstance(x, tf.Tensor):
        try:
            x = tf.convert_to_tensor(x)
        except ValueError as err:  # e.g. nested lists of different lengths
            raise ValueError(f"{name}: could not read {x!r:.200} as a string tensor: {err}")
        except TypeError as err:
            raise TypeError(f"{name} must be strings, could not read {x!r:.200}: {err}")
        if x.dtype == tf.float32 and _size(x) == 0:  # []: an empty batch
            x = tf.reshape(tf.constant([], tf.string), x.shape)
    if x.dtype != tf.string:
        raise TypeError(f"{name} must be strings (tf.string), got dtype {x.dtype.name}")
    return x


def _size(x):
    if isinstance(x, tf.RaggedTensor):
        x = x.flat_values
    return int(np.prod(x.shape.as_list())) if x.shape.is_fully_defined() else None


def static_dim(x, axis):
    """Size of x along `axis` if the static shape tells, else None."""
    if x.shape.rank is None:
        return None
    return x.shape[axis]


def dynamic_dim(x, axis):
    """Size of x along `axis` as an int32 scalar tensor (ragged: axis 0 only)."""
    if isinstance(x, tf.RaggedTensor):
        return tf.cast(x.nrows(), tf.int32)
    return tf.shape(x, out_type=tf.int32)[axis]


def same_dims(tensors, names, axis, what, where):
    """The tensors agree in size along `axis`, or an error naming each one's size.

    ValueError at once when the static shapes tell; otherwise returns the assertions that
    check it at run time (put them in front of the kernels with `after`).
    """
    static = [static_dim(t, axis) for t in tensors]
    known = [(n, d) for n, d in zip(names, static) if d is not None]
    if len({d for _, d in known}) > 1:
        sizes = ", ".join(f"{n} has {d}" for n, d in known)
        raise ValueError(f"{where}: the {what}s differ: {sizes}.")
    if len(known) == len(tensors) or len(tensors) < 2:
        return []
    sizes = [dynamic_dim(t, axis) for t in tensors]
    assertions = []
    for name, size in zip(names[1:], sizes[1:]):
        assertions.append(
            tf.debugging.Assert(
                tf.equal(sizes[0], size),
                [f"{where}: the {what}s differ: {names[0]} has", sizes[0], f", {name} has", size],
            )
        )
    return assertions


def values_in(x, name, low, high, where, hint="", high_name=None):
    """Every value of the integer tensor x (dense or ragged) is in [low, high), or an error
    naming `name`, the interval and an offending value.

    ValueError at once when x is eager; otherwise returns the assertion (see `same_dims`).
    In a graph ``high`` may be a scalar tensor known only at run time (a sequence length left
    unknown by the trace): ``high_name`` names it, and the error prints its value.
    """
    flat = x.flat_values if isinstance(x, tf.RaggedTensor) else x
    dynamic = isinstance(high, tf.Tensor)
    problem = f"{where}: {name} must be in [{low}, {high_name if dynamic else high}){hint}"
    if is_eager(flat):
        if tf.size(flat) == 0:
            return []
        smallest, largest = int(tf.reduce_min(flat)), int(tf.reduce_max(flat))
        if smallest < low or largest >= high:
            bad = smallest if smallest < low else largest
            raise ValueError(f"{problem}; it holds {bad}.")
        return []
    # An empty tensor gives min = dtype max and max = dtype min, which pass.
    smallest = tf.cast(tf.reduce_min(flat), tf.int64)
    largest = tf.cast(tf.reduce_max(flat), tf.int64)
    if dynamic:
        high = tf.cast(high, tf.int64)
        ok = (smallest >= low) & (largest < high)
        return [tf.debugging.Assert(ok, [f"{problem}; {high_name} is", high,
                                         "and it holds values from", smallest, "to", largest])]
    ok = (smallest >= low) & (largest < high)
    return [tf.debugging.Assert(ok, [f"{problem}; it holds values from", smallest, "to", largest])]


def after(assertions, value):
    """`value` (a tensor, ragged tensor or a structure of them) computed only once every
    assertion has passed: each of its component tensors depends on them."""
    if not assertions:
        return value
    with tf.control_dependencies(assertions):
        return tf.nest.map_structure(
            lambda t: t if t is None else tf.identity(t), value, expand_composites=True
        )


def zero_or_one(x, name, where):
    """Every value of the numeric or bool tensor x is 0 or 1 (a mask, not weights), or an
    error naming `name` and an offending value: ValueError eagerly, else the assertion."""
    if x.dtype == tf.bool:
        return []
    ok = tf.equal(x, tf.zeros_like(x)) | tf.equal(x, tf.ones_like(x))
    problem = f"{where}: {name} must hold only 0 and 1"
    if is_eager(x):
        bad = tf.boolean_mask(x, ~ok)
        if tf.size(bad) > 0:
            raise ValueError(f"{problem}; it holds {bad[0].numpy().item()!r}.")
        return []
    return [tf.debugging.Assert(tf.reduce_all(ok), [f"{problem}; it holds other values."])]


def same_shape(tensors, names, where):
    """Tensors of one rank have one shape, or an error naming every shape: ValueError at once
    when the static shapes tell, otherwise the assertion (see `same_dims`)."""
    shapes = [tf.TensorShape(t.shape) for t in tensors]
    problem = f"{where}: {', '.join(names[:-1])} and {names[-1]} must have the same shape"
    for axis in range(shapes[0].rank):
        if len({s[axis] for s in shapes if s[axis] is not None}) > 1:
            got = ", ".join(f"{n} {tuple(s.as_list())}" for n, s in zip(names, shapes))
            raise ValueError(f"{problem}; got {got}.")
    if all(s.is_fully_defined() for s in shapes) or any(
        isinstance(t, keras.KerasTensor) for t in tensors
    ):  # (symbolic: only what the static shapes tell)
        return []
    dynamic = [tf.shape(t, out_type=tf.int32) for t in tensors]
    ok = tf.reduce_all([tf.reduce_all(tf.equal(dynamic[0], d)) for d in dynamic[1:]])
    data = [f"{problem}; got"]
    for name, shape in zip(names, dynamic):
        data += [name, shape]
    return [tf.debugging.Assert(ok, data)]
