"""Option classes declared once: each field with its default, help text and check.

An option class is a dataclass whose fields are declared with `Option`: the default, the
help text of its command-line flag and the check of its value. From that one declaration

* ``check()`` (the `Options` base class) checks every field and raises the class's
  ``error`` naming the flag (``--max_seq_length must be an integer >= 5, got 4``), then the
  class's own `Options.check_together` for what one field alone cannot tell;
* `define_flags` defines the absl flags of the fields (names, defaults, help texts; a field
  checked by `one_of` is an enum flag, one without a default a required flag);
* `from_flags` builds the options object from the parsed flags.

The fields shared by the pre-training data options and the pre-training run options
(`MAX_SEQ_LENGTH`, `MAX_PREDICTIONS_PER_SEQ`, `MASKED_LM_PROB`, `SHORT_SEQ_PROB`,
`DO_WHOLE_WORD_MASK`) are declared here, once.

>>> import dataclasses
>>> @dataclasses.dataclass
... class Sampling(Options):
...     error = ValueError
...     batch_size: int = Option(32, "Examples per batch.", positive_integer()).field()
...     temperature: float = Option(1.0, "Softmax temperature.", greater_than(0)).field()
>>> Sampling(batch_size=8).check()
Sampling(batch_size=8, temperature=1.0)
>>> Sampling(temperature=0).check()
Traceback (most recent call last):
...
ValueError: --temperature must be > 0, got 0
"""

import dataclasses
import numbers

REQUIRED = dataclasses.MISSING  # the default of a field that has none (a required flag)


# ---- checks: value -> None, or the problem in words after the flag's name --------------------
class Check:
    """A check of one value: ``problem(value)`` is None for a good value, else the words
    that follow the flag's name in the error (``"must be ..., got ..."``). ``choices`` is
    the tuple of allowed values of a choice (an enum flag), else None.

    >>> integer(5).problem(4)
    'must be an integer >= 5, got 4'
    >>> integer(5).problem(128) is None
    True
    """

    choices = None

    def __init__(self, problem, choices=None):
        self.problem = problem
        if choices is not None:
            self.choices = tuple(choices)


def _is_integer(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def integer(low):
    """An integer >= ``low`` (not a bool, not ``2.5``)."""
    return Check(lambda value: None if _is_integer(value) and value >= low else
                 f"must be an integer >= {low}, got {value!r}")


def positive_integer():
    """An integer >= 1, in those words."""
    return Check(lambda value: None if _is_integer(value) and value >= 1 else
                 f"must be a positive integer, got {value!r}")


def probability(open_low=False):
    """A number in [0, 1], or in (0, 1] with ``open_low``."""
    interval = "(0, 1]" if open_low else "[0, 1]"

    def problem(value):
        if _is_number(value) and ((0 < value <= 1) if open_low else (0 <= value <= 1)):
            return None
        return f"must be a probability in {interval}, got {value!r}"
    return Check(problem)


def greater_than(bound):
    """A number > ``bound``."""
    return Check(lambda value: None if _is_number(value) and value > bound else
                 f"must be > {bound}, got {value!r}")


def one_of(choices):
    """One of ``choices`` (the flag is an enum flag)."""
    choices = tuple(choices)
    return Check(lambda value: None if value in choices else
                 f"must be one of {choices}, got {value!r}", choices=choices)


def given():
    """Not empty (a path, a name)."""
    return Check(lambda value: None if value else "is required")


# ---- declarations -----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Option:
    """One declared option: its default (`REQUIRED` for none), the help text of its flag and
    its `Check` (None: any value). ``field()`` makes the dataclass field that carries it; one
    `Option` may be the field of several classes.

    >>> MAX_SEQ_LENGTH.default, MAX_SEQ_LENGTH.check.problem(4)
    (128, 'must be an integer >= 5, got 4')
    """

    default: object
    help: str
    check: Check = None

    def field(self):
        """A `dataclasses.field` with this default, which carries this declaration."""
        default = {} if self.default is REQUIRED else {"default": self.default}
        return dataclasses.field(metadata={"option": self}, **default)


def declared_fields(options):
    """(name, type, `Option`) of every declared field of an option class or object."""
    return [(f.name, f.type, f.metadata["option"]) for f in dataclasses.fields(options)
            if "option" in f.metadata]


class Options:
    """Base of the option dataclasses: ``check()`` from the fields' declarations.

    A subclass sets ``error`` (the exception class its checks raise) and may override
    `check_together` for checks across fields. See the module docstring for an example.

    >>> import dataclasses
    >>> @dataclasses.dataclass(frozen=True)
    ... class Masking(Options):
    ...     masked_lm_prob: float = MASKED_LM_PROB.field()
    >>> Masking(masked_lm_prob=1.5).check()
    Traceback (most recent call last):
    ...
    ValueError: --masked_lm_prob must be a probability in (0, 1], got 1.5
    """

    error = ValueError

    def check(self):
        """Raises ``error`` naming the flag of the first field that fails its check, then
        runs `check_together`; returns the options."""
        for name, _, option in declared_fields(self):
            problem = option.check.problem(getattr(self, name)) if option.check else None
            if problem:
                raise self.error(f"--{name} {problem}")
        self.check_together()
        return self

    def check_together(self):
        """Checks across fields (every field already passed its own); raises ``error``."""


# ---- flags ------------------------------------------------------------------------------------
def define_flags(options_class, flag_values=None, skip=()):
    """Defines an absl flag for each declared field of ``options_class`` (but ``skip``):
    the field's name, default and help; integer, float, bool or string by the field's type,
    an enum for a `one_of` check, required when the field has no default."""
    from absl import flags

    flags.disclaim_key_flags()  # the flags are the caller's: its --help lists them
    flag_values = flag_values if flag_values is not None else flags.FLAGS
    define = {int: flags.DEFINE_integer, float: flags.DEFINE_float, bool: flags.DEFINE_bool,
              str: flags.DEFINE_string}
    for name, kind, option in declared_fields(options_class):
        if name in skip:
            continue
        default = None if option.default is REQUIRED else option.default
        required = option.default is REQUIRED
        if option.check is not None and option.check.choices is not None:
            flags.DEFINE_enum(name, default, list(option.check.choices), option.help,
                              flag_values=flag_values, required=required)
        elif kind in define:
            define[kind](name, default, option.help, flag_values=flag_values,
                         required=required)
        else:
            raise TypeError(f"{options_class.__name__}.{name}: no absl flag for type {kind!r}")


def from_flags(options_class, flag_values=None, **values):
    """``options_class`` built from the parsed flags of its declared fields; ``values``
    give the fields a flag does not (or override one)."""
    if flag_values is None:
        from absl import flags

        flag_values = flags.FLAGS
    kwargs = {name: flag_values[name].value for name, _, _ in declared_fields(options_class)
              if name in flag_values}
    kwargs.update(values)
    return options_class(**kwargs)


# ---- the fields shared by the pre-training data and the pre-training run ---------------------
MAX_SEQ_LENGTH = Option(128, "Tokens per sequence, [CLS] and [SEP] included (at least 5: "
                        "[CLS] A [SEP] B [SEP]).", integer(5))
MAX_PREDICTIONS_PER_SEQ = Option(20, "Maximum masked LM predictions per sequence.", integer(1))
MASKED_LM_PROB = Option(0.15, "Masked LM probability: the share of tokens masked.",
                        probability(open_low=True))
SHORT_SEQ_PROB = Option(0.1, "Probability of aiming at a sequence shorter than the maximum "
                        "length.", probability())
DO_WHOLE_WORD_MASK = Option(False, "Mask whole words (a token and its ## pieces) instead of "
                            "single WordPiece tokens.")
