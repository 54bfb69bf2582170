"""SavedModel exports and the TF Serving-compatible local server (`keras_bert.export.server`)."""
