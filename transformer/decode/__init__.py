"""Decoding: the Translator, sessions, the one decoder position (step), batching across users, beam search,
trajectories, caveats and language, and the tools that decode sentences to study them (translate, align,
disagree)."""
