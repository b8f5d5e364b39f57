"""The drill's logic: the mock, watch, explain's questions and mutants, hints, stats, repro, and the practice
notebook `start --notebook` writes. No torch, no rich."""
