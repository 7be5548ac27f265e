"""Aggregation of run records into leaderboard tables, comparison and plots."""
