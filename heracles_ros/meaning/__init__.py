"""The room for meaning: what the operator's words have to do with the scene's classes.

Word vectors (:mod:`.embeddings`, offline by default), what the labels mean (:mod:`.lexicon`), the scene's
words kept up to date (:mod:`.vocabulary`), and the resolver that ranks live objects by them
(:mod:`.resolver`); Hydra's own per-object features rank "things like this one" (:mod:`.features`).
Library code: no ROS, no agent; the agent's tool and the CLI call :class:`.resolver.Resolver`.
"""
