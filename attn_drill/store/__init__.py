"""The user's data under ATTN_DRILL_HOME and in the practice folder: state, history, attempts, schedule. No torch, no rich."""
