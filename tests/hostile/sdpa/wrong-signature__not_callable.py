"""The name is there, but bound to a number."""

scaled_dot_product_attention = 42
