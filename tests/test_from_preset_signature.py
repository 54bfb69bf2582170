"""One ``from_preset(preset, **kwargs)`` signature for every public class that has one."""

import inspect

import keras_bert


def test_every_from_preset_takes_preset_then_keyword_arguments():
    classes = [getattr(keras_bert, name) for name in keras_bert.__all__]
    classes = [c for c in classes if inspect.isclass(c) and hasattr(c, "from_preset")]
    names = sorted(c.__name__ for c in classes)
    # The encoder, the text layers and every task model.
    for expected in ("BertEncoder", "BertTokenizer", "BertPackInputs", "MaskedLMMasker",
                     "BertPreprocessor", "BertClassifier", "BertPretrainer"):
        assert expected in names, names
    for cls in classes:
        params = list(inspect.signature(cls.from_preset).parameters.values())
        assert params[0].name == "preset", (cls.__name__, params)
        assert params[0].default is inspect.Parameter.empty, cls.__name__
        assert params[-1].kind is inspect.Parameter.VAR_KEYWORD, (cls.__name__, params)
        assert all(p.default is not inspect.Parameter.empty for p in params[1:-1]), (
            cls.__name__, params)
