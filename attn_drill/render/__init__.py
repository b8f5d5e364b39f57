"""Everything the user sees, drawn with rich (listing.py: plain text, for `list`'s speed). No torch."""
