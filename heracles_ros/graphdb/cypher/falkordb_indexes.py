"""FalkorDB's index catalogue: its CREATE INDEX has no IF NOT EXISTS, so the mirror asks first."""

#: Indexed properties per label (no rows on a graph that does not exist yet).
INDEXES = "CALL db.indexes() YIELD label, properties RETURN label, properties"
