"""Data: fine-tuning data sets and input pipelines."""
