"""Parser tests: golden fixtures, semantics, robustness and the shared corpus."""
