"""SQuAD: reading the JSON files (`examples.py`), doc-stride windows of WordPiece ids
(`features.py`), n-best answer text (`predictions.py`) and the official EM/F1 (`metrics.py`),
as google-research/bert's ``run_squad.py`` and the SQuAD evaluation scripts."""
