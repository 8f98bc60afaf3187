"""Training and what it ships: data and corpora, the training run, its arguments and state, steps, distributed
training, weight averaging, evaluation, source lengths, the head atlas, shipping."""
