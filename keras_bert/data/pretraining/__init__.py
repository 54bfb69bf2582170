"""Pre-training data: raw text files to the original BERT TFRecords (`create.py`, as
google-research/bert's ``create_pretraining_data.py``), those records back as a `tf.data`
input (`record_input.py`), and dynamic masking straight from text (`text_input.py`)."""
