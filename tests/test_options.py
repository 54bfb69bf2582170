"""keras_bert.options: checks, flags and option objects from one declaration per field."""

import dataclasses

import pytest
from absl import flags

from keras_bert import options
from keras_bert.data.pretraining.chunks import PretrainingDataOptions
from keras_bert.data.pretraining.text_files import PretrainingDataError
from keras_bert.training.pretraining_run import PretrainingError, PretrainingOptions


class Odd(ValueError):
    pass


@dataclasses.dataclass
class Example(options.Options):
    error = Odd

    path: str = options.Option(options.REQUIRED, "Where.", options.given()).field()
    steps: int = options.Option(10, "Steps.", options.positive_integer()).field()
    low: int = options.Option(0, "At least zero.", options.integer(0)).field()
    rate: float = options.Option(0.5, "Rate.", options.greater_than(0)).field()
    share: float = options.Option(0.1, "Share.", options.probability()).field()
    kind: str = options.Option("a", "Kind.", options.one_of(("a", "b"))).field()
    verbose: bool = options.Option(False, "Talk.").field()
    note: str = options.Option(None, "Anything.").field()
    undeclared: int = 3  # a plain field: no check, no flag

    def check_together(self):
        if self.low > self.steps:
            raise Odd(f"--low={self.low} is more than --steps={self.steps}")


@pytest.mark.parametrize("changes, message", [
    (dict(path=""), "--path is required"),
    (dict(steps=0), "--steps must be a positive integer, got 0"),
    (dict(steps=True), "--steps must be a positive integer, got True"),
    (dict(steps=2.5), "--steps must be a positive integer, got 2.5"),
    (dict(low=-1), "--low must be an integer >= 0, got -1"),
    (dict(rate=0.0), "--rate must be > 0, got 0.0"),
    (dict(rate="1"), "--rate must be > 0, got '1'"),
    (dict(share=1.5), r"--share must be a probability in \[0, 1\], got 1.5"),
    (dict(kind="c"), r"--kind must be one of \('a', 'b'\), got 'c'"),
    (dict(low=11), "--low=11 is more than --steps=10"),
])
def test_check_raises_the_class_error_naming_the_flag(changes, message):
    with pytest.raises(Odd, match=message):
        Example(**dict(dict(path="/p"), **changes)).check()


def test_check_returns_the_options_and_accepts_edges():
    good = Example(path="/p", low=10, share=0.0, kind="b", undeclared="anything")
    assert good.check() is good
    assert Example(path="/p", share=1).check().share == 1
    assert options.probability(open_low=True).problem(0) is not None
    assert options.probability(open_low=True).problem(1) is None


def test_flags_from_the_declaration():
    values = flags.FlagValues()
    options.define_flags(Example, values, skip=("note",))
    assert "undeclared" not in values and "note" not in values
    assert values["steps"].default == 10 and values["steps"].help == "Steps."
    assert values["kind"].flag_type() == "string enum" and values["verbose"].flag_type() == "bool"
    assert values["rate"].flag_type() == "float" and values["path"].flag_type() == "string"
    with pytest.raises(flags.IllegalFlagValueError):
        values(["prog", "--path=/p", "--kind=c"])
    # Listed as the flags of the module that called define_flags (its --help shows them).
    assert "steps" in {f.name for f in values.flags_by_module_dict()[__name__]}


def test_required_field_is_a_required_flag():
    values = flags.FlagValues()
    options.define_flags(Example, values)
    with pytest.raises(flags.IllegalFlagValueError, match="path"):
        values(["prog"])
        values.validate_all_flags()


def test_options_from_parsed_flags():
    values = flags.FlagValues()
    options.define_flags(Example, values)
    values(["prog", "--path=/data", "--steps=7", "--kind=b", "--verbose", "--share=0.25"])
    built = options.from_flags(Example, values, undeclared=9)
    assert built == Example(path="/data", steps=7, kind="b", verbose=True, share=0.25,
                            undeclared=9)


def test_a_type_without_a_flag_is_named():
    @dataclasses.dataclass
    class Listed(options.Options):
        names: list = options.Option(None, "Names.").field()

    with pytest.raises(TypeError, match="Listed.names: no absl flag for type"):
        options.define_flags(Listed, flags.FlagValues())


def test_shared_fields_are_one_declaration_in_both_classes():
    def declarations(cls):
        return {name: option for name, _, option in options.declared_fields(cls)}

    data, run = declarations(PretrainingDataOptions), declarations(PretrainingOptions)
    for name in ("max_seq_length", "max_predictions_per_seq", "masked_lm_prob",
                 "short_seq_prob", "do_whole_word_mask"):
        assert data[name] is run[name], name
    for cls, error in ((PretrainingDataOptions, PretrainingDataError),
                       (PretrainingOptions, PretrainingError)):
        values = dict(model_dir="/m", input_file="x", preset="tiny") \
            if cls is PretrainingOptions else {}
        with pytest.raises(error, match=r"--masked_lm_prob must be a probability in \(0, 1\]"):
            cls(**values, masked_lm_prob=0.0).check()
        with pytest.raises(error, match="--max_seq_length must be an integer >= 5, got 4"):
            cls(**values, max_seq_length=4, max_predictions_per_seq=1).check()


def test_both_classes_define_their_flags_with_the_original_defaults():
    data = flags.FlagValues()
    options.define_flags(PretrainingDataOptions, data)
    data(["prog"])
    assert options.from_flags(PretrainingDataOptions, data) == PretrainingDataOptions()
    run = flags.FlagValues()
    options.define_flags(PretrainingOptions, run)
    run(["prog", "--model_dir=/m", "--input_file=x", "--optimizer=lamb"])
    assert options.from_flags(PretrainingOptions, run) == PretrainingOptions(
        model_dir="/m", input_file="x", optimizer="lamb")
    assert run["mixed_precision"].flag_type() == "string enum"
