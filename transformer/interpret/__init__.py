"""Interpretation of the model's passes: attention captured by hooks and heads switched off by pre-hooks (capture),
inside one head, attribution, alignment, agreement, the head atlas's statistics and roles, head importance,
attention history, word spans, figures."""
