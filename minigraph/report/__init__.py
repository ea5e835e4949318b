"""report/: text and file renderings of what was measured (tables, summaries, explanations,
CSV, traces); pure functions that return text, never print.
"""
