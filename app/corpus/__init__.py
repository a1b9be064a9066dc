"""The corpus: reading its documents within the allowed roots, re-hashing them, citing them."""
