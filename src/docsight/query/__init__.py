"""Query analysis: what a question says beyond its words (page references, ...)."""
