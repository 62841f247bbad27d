"""The Flow Jupyter kernel, its magics, and the IPython extension (runtime.md §8)."""
