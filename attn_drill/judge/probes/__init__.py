"""Measurements read off the user's code's behaviour: one module per family, named as in diagnoses/."""
