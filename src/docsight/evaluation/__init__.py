"""Evaluation: metrics now; datasets, runs and reports follow."""
