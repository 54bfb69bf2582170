"""`LabelNames`: the class names a classifying task model carries (``label_names``).

A model with names keeps them in its config, so ``.keras`` files and ``save_to_preset``
presets carry them; its serving and LiteRT exports name their labels with them unless the
export is given other ``label_names``. ``predict`` returns logits whether or not the classes
have names.
"""

from keras_bert.layers.heads import check_label_names


class LabelNames:
    """Mixin of `BertClassifier` and `BertTokenClassifier`: ``label_names``, the name of each
    class in class-id order (None: unnamed), checked against ``num_classes``.

    >>> from keras_bert import BertClassifier
    >>> model = BertClassifier.from_preset("tiny_random", num_classes=2,
    ...                                    label_names=["negative", "positive"])
    >>> model.label_names, model.get_config()["label_names"]
    (['negative', 'positive'], ['negative', 'positive'])
    >>> model.label_names = ["neg", "pos"]  # checked as the constructor checks it
    >>> model.label_names = ["neg"]
    Traceback (most recent call last):
    ...
    ValueError: BertClassifier: label_names has 1 names (['neg']) but num_classes is 2; give one name per class, in class-id order, or label_names=None.
    """

    @property
    def label_names(self):
        """The class names in class-id order (a list), or None."""
        names = getattr(self, "_label_names", None)
        return None if names is None else list(names)

    @label_names.setter
    def label_names(self, names):
        owner = type(self).__name__
        if names is not None and getattr(self, "regression", False):
            raise ValueError(f"{owner}: label_names names classes, and num_classes=1 is "
                             "regression (one score, no classes); leave label_names=None.")
        self._label_names = check_label_names(names, self.num_classes, owner)
