"""Leaderboards from run records: aggregation, the versioned CSV schema,
tables, plots, the web page, comparisons and reproduction reports."""
