"""Embedding: the models and endpoints that turn text into vectors, for the loader (the
queue) and the server (a question's vector).

embedders.py    the embedder a database's settings name: built-in MiniLM or an
                OpenAI-compatible endpoint, with their errors
minilm.py       all-MiniLM-L6-v2 as a NumPy forward pass (the weights ship in a package)
minilm_onnx.py  the same model as an ONNX Runtime graph (the loader's engine, and the
                server's for a question), and its int8 variant (quantized MatMul weights,
                cached on disk)
worker_thread.py  the thread a question's forward pass runs on, beside the lexical legs

What text a symbol or file is embedded as is embedtext.py (beside this package: a released
migration imports it by that name).
"""
