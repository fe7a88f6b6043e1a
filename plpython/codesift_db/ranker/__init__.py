"""The learned ranker (issue 33): the features of a candidate (features.py, shared by the
stage in the server and the training in the loader) and the model over them (model.py)."""
