"""The fixtures the checkpoint tests share: ``google_bert``, google-research/bert's own
modeling.py and tokenization.py (tests/checkpoints/test_google.py), for the tests of its
heads too (tests/checkpoints/test_google_heads.py)."""

from tests.checkpoints.test_google import google_bert  # noqa: F401  (a fixture)
