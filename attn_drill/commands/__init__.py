"""Each command's work, called by cli.py: resolve what the user meant, run it, draw it. No torch."""
