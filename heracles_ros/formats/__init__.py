"""Answer and goal formats: the model's SLDP answers, PDDL goals, their syntax tree, words and equivalence."""
