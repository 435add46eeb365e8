"""Training the e5-small cross-encoder reranker (JAX + optax, CPU).

Nothing in the server imports this package: it needs the optional ``train`` extra
(``pip install -e '.[train]'``) and runs only for ``stichtag models train-reranker``,
the training tests and ``bench/bench_rerank.py``. The ONNX graph and the compact
artifact format live in ``stichtag.models.cross_encoder`` (numpy + onnx only), so building
the default models never needs JAX.
"""
