"""What the notebook user sees: the run view, prompts and the diagnostics view (runtime.md §9)."""
