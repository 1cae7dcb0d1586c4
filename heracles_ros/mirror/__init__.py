"""The scene mirror: Hydra's scene graph kept in the database (reconcile, its loop), the scene's history,
the operator's corrections, snapshot-consistent reads and the timeline of changes."""
