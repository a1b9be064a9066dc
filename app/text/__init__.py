"""Text as the agents read it: document blocks and sentences, relevance, and terms."""
