"""The model core: its config, attention, layers, the Transformer, tokenizer, checkpoints (and their metrics.json),
devices."""
