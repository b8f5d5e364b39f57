"""The drill's logic: the mock, watch, explain's questions and mutants, hints, stats, repro. No torch, no rich."""
