"""Known TFDS sets through tfds.testing.mock_data (tfds.load of a real set hangs offline)."""

import pytest
import tensorflow_datasets as tfds

from keras_bert.data import tfds_tasks


@pytest.mark.parametrize("name", ["glue/sst2", "glue/mrpc", "glue/stsb", "glue/mnli",
                                  "imdb_reviews"])
def test_known_sets_load_every_split(name):
    task = tfds_tasks.task_of(name)
    with tfds.testing.mock_data(num_examples=5):
        for split in ("train", "validation", "test"):
            examples = tfds_tasks.load_split(name, split)
            assert len(examples) == 5 and all(isinstance(t, str) for t in examples.texts)
            assert (examples.texts_b is None) == (task.text_b is None)
            hidden = split == "test" and not task.test_has_labels
            assert (examples.labels is None) == hidden
            if examples.labels is not None:
                kind = float if task.num_classes == 1 else int
                assert all(isinstance(v, kind) for v in examples.labels)


def test_unknown_set_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"'glue/sst3' is not a set whose columns are known.*"
                                         r"glue/sst2"):
        tfds_tasks.task_of("glue/sst3")
