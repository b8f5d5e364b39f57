"""Known mistakes as executable variants of the reference: one module per family, named as in diagnoses/."""
