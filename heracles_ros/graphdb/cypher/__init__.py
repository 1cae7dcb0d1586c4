"""All Cypher text of the package, one module per concern.

Keeping queries here (not inline) lets reviewers see every statement that
reaches the database, and lets both backends' dialect differences live in one
place.
"""
