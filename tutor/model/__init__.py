"""Pure rules: the catalog, attempts, calibration, review, finding an exercise, verdicts and patches (no files written, no views)."""
