"""Is the cluster delivering? Readers of a cluster's own measurements (nccl-tests, training
logs) and findings against what the model expects of this hardware and layout.

Layers, each importable alone:

- :mod:`.text`: bounded reading of an uploaded or named file (size, lines, encoding);
- :mod:`.nccl_tests`, :mod:`.train_log`: pure parsers (nothing executed, nothing imported
  from a file), a bad file answered by one :class:`llmcost._validate.InputError` naming the
  line and what was expected;
- :mod:`.expect`: expected bus bandwidth from :mod:`llmcost.training.comm`;
- :mod:`.findings`: threshold checks, each threshold with its source;
- :mod:`.check`: the whole check (``llmcost check``) as one JSON-ready dict.
"""
